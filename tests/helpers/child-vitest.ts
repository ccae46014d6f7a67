/**
 * A vitest run inside a test: for negative controls that must show a whole suite failing (the error-log guard's
 * controls project) and for suites re-run under other settings (the ledger's through PgBouncer).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { projectRoot } from "../../scripts/lib/stack";

export interface ChildVitestRun {
  /** The child's exit status (null when it was killed, e.g. at the timeout). */
  status: number | null;
  passed: number;
  failed: number;
  /** Each test's title, status and failure messages, from the JSON report (empty when the run crashed). */
  tests: { title: string; status: string; failureMessages: string[] }[];
  /** The child's stdout and stderr (the default reporter's lines), for diagnostics. */
  output: string;
}

/**
 * Runs `vitest run --project <project> [args] [files]` from the project root in a child process and waits for it (at most
 * `timeoutMs`). Its environment is this process's without vitest's own markers (`VITEST*`), plus `env`, where an
 * undefined value removes the variable.
 *
 * Returns its status, counts and per-test results, read from a JSON report written to a temporary folder (removed
 * afterwards); a run that crashed before reporting has 0 passed and 0 failed. Never throws for a failing run.
 */
export function runChildVitest(options: {
  project: string;
  files?: string[];
  env?: Record<string, string | undefined>;
  /** More vitest arguments, e.g. `--bail=1` for a control that needs only its first failure. */
  args?: string[];
  timeoutMs: number;
}): ChildVitestRun {
  const environment: Record<string, string> = {};
  for (const [key, value] of Object.entries({ ...process.env, ...options.env })) {
    if (value !== undefined && !key.startsWith("VITEST")) environment[key] = value;
  }
  const reportDir = mkdtempSync(join(tmpdir(), `child-vitest-${options.project}-`));
  const reportPath = join(reportDir, "report.json");
  try {
    const child = spawnSync(
      process.execPath,
      [
        "node_modules/vitest/vitest.mjs",
        "run",
        "--project",
        options.project,
        "--reporter=default",
        "--reporter=json",
        `--outputFile.json=${reportPath}`,
        ...(options.args ?? []),
        ...(options.files ?? []),
      ],
      {
        cwd: projectRoot,
        env: environment as NodeJS.ProcessEnv,
        encoding: "utf8",
        timeout: options.timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    let report: Pick<ChildVitestRun, "passed" | "failed" | "tests"> = { passed: 0, failed: 0, tests: [] };
    try {
      const json = JSON.parse(readFileSync(reportPath, "utf8")) as {
        numPassedTests: number;
        numFailedTests: number;
        testResults: { assertionResults: ChildVitestRun["tests"] }[];
      };
      report = {
        passed: json.numPassedTests,
        failed: json.numFailedTests,
        tests: json.testResults.flatMap((file) => file.assertionResults),
      };
    } catch {
      // No report: the run crashed; its status and output say so.
    }
    return { status: child.status, ...report, output: `${child.stdout}\n${child.stderr}` };
  } finally {
    rmSync(reportDir, { recursive: true, force: true });
  }
}
