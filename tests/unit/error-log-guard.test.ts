/**
 * The error-log guard (tests/setup/error-logs.ts) works both ways: an error the allow-list names passes, and its
 * negative control, tests/controls/error-log.test.ts, fails for each unexpected error, naming it. The control runs
 * in a child vitest; by hand: `ERROR_LOG_CONTROL=1 npx vitest run --project controls` (must fail, 3 tests).
 */
import { describe, expect, it } from "vitest";
import { log } from "../../lib/log";
import { runChildVitest } from "../helpers/child-vitest";
import { EXPECTED_ERROR_LOGS } from "../setup/expected-error-logs";

describe("error logs", () => {
  it("an error the allow-list names is recorded and allowed", () => {
    log().error("deliberate error for the error-log guard");
    expect(EXPECTED_ERROR_LOGS.every((entry) => entry.why.length > 0)).toBe(true);
  });

  it("negative control: each test of tests/controls/error-log.test.ts fails, naming its error", () => {
    const run = runChildVitest({ project: "controls", env: { ERROR_LOG_CONTROL: "1" }, timeoutMs: 120_000 });
    expect(run.status, run.output).toBe(1);
    expect(run.failed).toBe(3);
    expect(run.passed).toBe(0);
    const failures = run.tests.map((test) => test.failureMessages.join("\n"));
    expect(failures.join("\n")).toContain("unlisted logger error for the negative control");
    expect(failures.join("\n")).toContain("unlisted console error for the negative control");
    expect(failures.join("\n")).toContain("deliberate error for the error-log guard");
  }, 120_000);
});
