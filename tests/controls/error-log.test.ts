/**
 * The error-log guard's negative control (tests/setup/error-logs.ts): each test here logs an error the allow-list
 * does not name, so each must FAIL. Only the `controls` project runs it (ERROR_LOG_CONTROL=1), and
 * tests/unit/error-log-guard.test.ts asserts that it fails.
 */
import { expect, it } from "vitest";
import { log } from "../../lib/log";

it("logs an unlisted error through the shared logger", () => {
  log().error({ err: new Error("unlisted logger error for the negative control") }, "control");
  expect(true).toBe(true);
});

it("writes an unlisted console.error", () => {
  console.error("unlisted console error for the negative control");
  expect(true).toBe(true);
});

it("logs an allow-listed message, but from a test the allow-list does not name", () => {
  log().error("deliberate error for the error-log guard");
  expect(true).toBe(true);
});
