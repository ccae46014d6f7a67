/**
 * `npm test`'s summary names what failed (scripts/lib/test-reports.ts): CI often keeps only the end of its log, and
 * a bare "730 passed, 1 failed" left a failed run with no way to tell which test it was. The reports below have
 * the shapes vitest's `json` reporter and Playwright's `json` reporter write (fields this reader ignores left out).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { firstLine, readPlaywrightReport, readVitestReport } from "../../scripts/lib/test-reports";

const dir = mkdtempSync(join(tmpdir(), "test-reports-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeReport(name: string, body: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof body === "string" ? body : JSON.stringify(body));
  return path;
}

describe("vitest reports", () => {
  it("names each failed test and each file that failed with no failed test, relative to the root", () => {
    const path = writeReport("vitest.json", {
      numPassedTests: 3,
      numFailedTests: 1,
      numPendingTests: 1,
      numTodoTests: 1,
      testResults: [
        {
          name: "/repo/tests/http/payments.test.ts",
          status: "failed",
          message: "",
          assertionResults: [
            { fullName: "payments a replay is identical", status: "passed" },
            { fullName: "payments two racers debit once", status: "failed" },
            { fullName: "payments later", status: "skipped" },
          ],
        },
        {
          name: "/repo/tests/http/broken.test.ts",
          status: "failed",
          message: "Hook timed out in 120000ms.\nIf this is a long-running hook, pass a timeout value",
          assertionResults: [],
        },
        { name: "/repo/tests/http/fine.test.ts", status: "passed", message: "", assertionResults: [] },
      ],
    });
    expect(readVitestReport(path, "http", "/repo")).toEqual({
      counts: { passed: 3, failed: 1, skipped: 2 },
      failures: [
        "http › tests/http/payments.test.ts › payments two racers debit once",
        "http › tests/http/broken.test.ts › (the file failed: Hook timed out in 120000ms.)",
      ],
    });
  });

  it("is null for a missing or unreadable report (the runner crashed), so the caller counts its exit code", () => {
    expect(readVitestReport(join(dir, "absent.json"), "unit", "/repo")).toBeNull();
    expect(readVitestReport(writeReport("cut.json", '{"numPassedTests": 3, "testRes'), "unit", "/repo")).toBeNull();
  });
});

describe("Playwright reports", () => {
  it("names tests that failed on every attempt, with their describe blocks; a flaky test counts as passed", () => {
    const path = writeReport("playwright.json", {
      stats: { expected: 2, unexpected: 2, flaky: 1, skipped: 0 },
      errors: [{ message: "Timed out waiting 1800s for the test suite to run\n  at ..." }],
      suites: [
        {
          title: "wallet.spec.ts",
          file: "wallet.spec.ts",
          specs: [
            { title: "top up 25.00", file: "wallet.spec.ts", line: 9, tests: [{ status: "expected" }] },
            { title: "C09: a double click", file: "wallet.spec.ts", line: 29, tests: [{ status: "unexpected" }] },
            { title: "two tabs", file: "wallet.spec.ts", line: 76, tests: [{ status: "flaky" }] },
          ],
          suites: [
            {
              title: "every page fits",
              file: "wallet.spec.ts",
              specs: [
                { title: "at 390 px", file: "wallet.spec.ts", line: 68, tests: [{ status: "unexpected" }] },
                { title: "at 1280 px", file: "wallet.spec.ts", line: 68, tests: [{ status: "expected" }] },
              ],
            },
          ],
        },
      ],
    });
    expect(readPlaywrightReport(path)).toEqual({
      counts: { passed: 3, failed: 2, skipped: 0 },
      failures: [
        "e2e › wallet.spec.ts:29 › C09: a double click",
        "e2e › wallet.spec.ts:68 › every page fits › at 390 px",
        "e2e › (outside any test: Timed out waiting 1800s for the test suite to run)",
      ],
    });
  });

  it("is null for a missing report", () => {
    expect(readPlaywrightReport(join(dir, "absent.json"))).toBeNull();
  });
});

describe("firstLine", () => {
  it("keeps a failure line one line of at most 200 characters", () => {
    expect(firstLine("  first\nsecond")).toBe("first");
    expect(firstLine(undefined)).toBe("no message");
    const long = firstLine("x".repeat(500));
    expect(long).toHaveLength(200);
    expect(long.endsWith("…")).toBe(true);
  });
});
