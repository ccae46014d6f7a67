/**
 * Setup file of every vitest project: a test during which this process logs an error it did not expect fails.
 * "An error" is a line at level `error` or `fatal` from the shared logger (lib/log.ts `observeErrorLogs`) or a
 * `console.error` call (libraries such as ioredis report unhandled errors that way). Tests that provoke an error on
 * purpose list it in tests/setup/expected-error-logs.ts, with why. The check runs in `afterEach`, so it fails the
 * test even when the test itself passed; an error logged outside any test (in `beforeAll`, or after the last test)
 * fails the file in `afterAll`.
 *
 * What it does not see: processes a test starts (the app, the sandbox bank, CLIs) write their own logs; the http
 * suite's app answers a 500 for any unhandled error, which the OpenAPI response check fails on.
 *
 * Negative control: tests/unit/error-log-guard.test.ts runs a test that logs an unlisted error in a child vitest
 * (`ERROR_LOG_CONTROL=1 npx vitest run --project unit tests/unit/error-log-guard.test.ts` by hand) and asserts it
 * fails, naming the error.
 */
import { format } from "node:util";
import { afterAll, afterEach, beforeEach, expect } from "vitest";
import { observeErrorLogs } from "../../lib/log";
import { EXPECTED_ERROR_LOGS } from "./expected-error-logs";

/** One error line seen in this worker. */
export interface SeenErrorLog {
  readonly source: "logger" | "console.error";
  readonly message: string;
  /** The full name of the test running when it was logged; undefined outside a test. */
  readonly test: string | undefined;
}

/** Error lines seen in this test file and not judged yet. */
const seen: SeenErrorLog[] = [];
/** Lines seen before a test started (in a hook, or an earlier test's leftovers), judged in afterAll. */
const seenOutsideTests: SeenErrorLog[] = [];

function currentTest(): string | undefined {
  return expect.getState().currentTestName;
}

/** The message of a pino call: `msg` (a string argument), then the `err` object's message, if any. */
function messageOf(args: readonly unknown[]): string {
  const text = args.filter((arg) => typeof arg === "string").join(" ");
  const first = args[0];
  const err = first instanceof Error ? first : (first as { err?: unknown } | null | undefined)?.err;
  return err instanceof Error ? `${text}${text ? ": " : ""}${err.message}` : text;
}

const stopObserving = observeErrorLogs((_level, args) => {
  seen.push({ source: "logger", message: messageOf(args), test: currentTest() });
});
const consoleError = console.error;
console.error = (...args: unknown[]) => {
  seen.push({ source: "console.error", message: format(...args), test: currentTest() });
  consoleError.apply(console, args);
};

/** Whether the allow-list expects `entry` (its test and message both match an entry). */
export function isExpected(entry: SeenErrorLog): boolean {
  return EXPECTED_ERROR_LOGS.some(
    (expected) => entry.test !== undefined && expected.test.test(entry.test) && expected.message.test(entry.message),
  );
}

/** Removes and returns the lines seen so far that the allow-list does not expect. */
function takeUnexpected(): SeenErrorLog[] {
  return seen.splice(0).filter((entry) => !isExpected(entry));
}

function describeAll(entries: readonly SeenErrorLog[]): string {
  return entries.map((entry) => `  ${entry.source}: ${entry.message.slice(0, 500)}`).join("\n");
}

beforeEach(() => {
  seenOutsideTests.push(...takeUnexpected());
});

afterEach(() => {
  const unexpected = takeUnexpected();
  if (unexpected.length > 0) {
    throw new Error(
      `this test logged ${unexpected.length} unexpected error(s) (tests/setup/expected-error-logs.ts lists the ` +
        `expected ones):\n${describeAll(unexpected)}`,
    );
  }
});

afterAll(() => {
  stopObserving();
  console.error = consoleError;
  const unexpected = [...seenOutsideTests.splice(0), ...takeUnexpected()];
  if (unexpected.length > 0) {
    throw new Error(`unexpected error(s) logged outside a test of this file:\n${describeAll(unexpected)}`);
  }
});
