/**
 * The error-log guard (tests/setup/error-logs.ts) works both ways: an error the allow-list names passes, and its
 * negative control, tests/controls/error-log.test.ts, fails for each unexpected error, naming it. The control runs
 * in a child vitest; by hand: `ERROR_LOG_CONTROL=1 npx vitest run --project controls` (must fail, 3 tests).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { log } from "../../lib/log";
import { projectRoot } from "../../scripts/lib/stack";
import { EXPECTED_ERROR_LOGS } from "../setup/expected-error-logs";

describe("error logs", () => {
  it("an error the allow-list names is recorded and allowed", () => {
    log().error("deliberate error for the error-log guard");
    expect(EXPECTED_ERROR_LOGS.every((entry) => entry.why.length > 0)).toBe(true);
  });

  it("negative control: each test of tests/controls/error-log.test.ts fails, naming its error", () => {
    let report: {
      numFailedTests: number;
      numPassedTests: number;
      testResults: { assertionResults: { title: string; status: string; failureMessages: string[] }[] }[];
    };
    const dir = mkdtempSync(join(tmpdir(), "error-log-control-"));
    const reportPath = join(dir, "report.json");
    try {
      const child = spawnSync(
        process.execPath,
        [
          "node_modules/vitest/vitest.mjs",
          "run",
          "--project",
          "controls",
          "--reporter=json",
          `--outputFile.json=${reportPath}`,
        ],
        { cwd: projectRoot, env: { ...process.env, ERROR_LOG_CONTROL: "1" }, encoding: "utf8", timeout: 120_000 },
      );
      expect(child.status, child.stderr).toBe(1);
      report = JSON.parse(readFileSync(reportPath, "utf8"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(report.numFailedTests).toBe(3);
    expect(report.numPassedTests).toBe(0);
    const failures = report.testResults
      .flatMap((file) => file.assertionResults)
      .map((test) => test.failureMessages.join("\n"));
    expect(failures.join("\n")).toContain("unlisted logger error for the negative control");
    expect(failures.join("\n")).toContain("unlisted console error for the negative control");
    expect(failures.join("\n")).toContain("deliberate error for the error-log guard");
  }, 120_000);
});
