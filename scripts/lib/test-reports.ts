/**
 * Reading the machine-readable reports `npm test` asks its runners for (vitest's `--reporter=json`, Playwright's
 * `json` reporter): how many tests passed, failed and were skipped, and a line naming each failure, so that the
 * end of a CI log (often all that is kept of it) says which tests failed and not only how many.
 */
import { existsSync, readFileSync } from "node:fs";
import { relative } from "node:path";

/** Tests counted in one suite or in the whole run. */
export interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}

/** A suite's report: its counts and one line per failure (`<suite> › <file> › <test title>`). */
export interface SuiteReport {
  counts: Counts;
  failures: string[];
}

/** The first line of a message, at most 200 characters (a failure line stays one line). */
export function firstLine(message: string | undefined): string {
  const line = (message ?? "no message").trim().split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** The parts of vitest's JSON report read here (Jest's format, which vitest's `json` reporter writes). */
interface VitestReport {
  numPassedTests?: number;
  numFailedTests?: number;
  numPendingTests?: number;
  numTodoTests?: number;
  testResults?: {
    name?: string;
    status?: string;
    message?: string;
    assertionResults?: { fullName?: string; status?: string }[];
  }[];
}

/**
 * Reads vitest's JSON report at `path` (absolute). `suite` starts each failure line; file names are given
 * relative to `root`. A file that failed with no failed test in it (an import error, a failing `beforeAll` or
 * `afterAll`) gets a line of its own with the first line of its message.
 *
 * Returns null when the file is missing or is not JSON (the runner crashed before writing it). Never throws.
 */
export function readVitestReport(path: string, suite: string, root: string): SuiteReport | null {
  const json = readJson<VitestReport>(path);
  if (!json) return null;
  const failures: string[] = [];
  for (const file of json.testResults ?? []) {
    const name = relative(root, file.name ?? "?");
    const failedTests = (file.assertionResults ?? []).filter((test) => test.status === "failed");
    for (const test of failedTests) failures.push(`${suite} › ${name} › ${test.fullName ?? "?"}`);
    if (file.status === "failed" && failedTests.length === 0) {
      failures.push(`${suite} › ${name} › (the file failed: ${firstLine(file.message)})`);
    }
  }
  return {
    counts: {
      passed: json.numPassedTests ?? 0,
      failed: json.numFailedTests ?? 0,
      skipped: (json.numPendingTests ?? 0) + (json.numTodoTests ?? 0),
    },
    failures,
  };
}

/** The parts of Playwright's JSON report read here. */
interface PlaywrightReport {
  stats?: { expected?: number; unexpected?: number; flaky?: number; skipped?: number };
  errors?: { message?: string }[];
  suites?: PlaywrightSuite[];
}
interface PlaywrightSuite {
  title?: string;
  suites?: PlaywrightSuite[];
  specs?: { title?: string; file?: string; line?: number; tests?: { status?: string }[] }[];
}

/**
 * Reads Playwright's JSON report at `path`. A test counts as failed when Playwright marks it `unexpected` (it
 * failed on every attempt); a `flaky` one (passed on a retry) counts as passed. Each failure line is
 * `e2e › <file>:<line> › [<describe> › ]<title>`; an error outside any test (global setup, a timeout of the whole
 * run) gets a line too.
 *
 * Returns null when the file is missing or is not JSON. Never throws.
 */
export function readPlaywrightReport(path: string): SuiteReport | null {
  const json = readJson<PlaywrightReport>(path);
  if (!json) return null;
  const failures: string[] = [];
  const walk = (suite: PlaywrightSuite, describeTitles: string[]): void => {
    for (const spec of suite.specs ?? []) {
      if (!(spec.tests ?? []).some((test) => test.status === "unexpected")) continue;
      const title = [...describeTitles, spec.title ?? "?"].join(" › ");
      failures.push(`e2e › ${spec.file ?? "?"}:${spec.line ?? "?"} › ${title}`);
    }
    for (const inner of suite.suites ?? []) walk(inner, [...describeTitles, inner.title ?? "?"]);
  };
  // The top-level suites are the spec files; the spec's own `file` names them.
  for (const file of json.suites ?? []) walk(file, []);
  for (const error of json.errors ?? []) failures.push(`e2e › (outside any test: ${firstLine(error.message)})`);
  const stats = json.stats ?? {};
  return {
    counts: {
      passed: (stats.expected ?? 0) + (stats.flaky ?? 0),
      failed: stats.unexpected ?? 0,
      skipped: stats.skipped ?? 0,
    },
    failures,
  };
}

function readJson<T>(path: string): T | null {
  if (!existsSync(path)) return null;
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch {
    return null;
  }
}
