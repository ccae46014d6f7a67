/**
 * Bounds on the test run itself. A CI run once spent 75 minutes in the short storm's start, printed nothing about
 * where, and ended with CI's time limit and a summary of "855 passed, 0 failed": the storm was never counted. Now
 * each suite has a bound (scripts/test.ts, `runForeground`'s `timeoutMs`), the storm has its own and says where it
 * was (scripts/storm/watchdog.ts), and a run cut short by a signal counts what it did not finish.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runForeground } from "../../scripts/lib/processes";
import { projectRoot } from "../../scripts/lib/stack";

const dir = mkdtempSync(join(tmpdir(), "run-bounds-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Runs `node --import tsx <args>` in the project and resolves with its exit code and output; `onStderr` sees the
 * stderr read so far after each chunk, with a way to signal the child.
 */
function runTsx(
  args: string[],
  onStderr?: (stderr: string, signal: (name: NodeJS.Signals) => void) => void,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", ...args], {
      cwd: projectRoot,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
      env: { ...process.env, TEST_STACK: "" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      onStderr?.(stderr, (name) => child.kill(name));
    });
    child.on("exit", (exitCode) => resolve({ code: exitCode, stdout, stderr }));
  });
}

describe("runForeground's bound", () => {
  it("stops a run past its bound and says it timed out", async () => {
    // A child that never ends by itself, with a grandchild in its group.
    const status = await runForeground({
      name: "endless",
      command: process.execPath,
      args: [
        "-e",
        "require('node:child_process').spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }); setInterval(() => {}, 1000)",
      ],
      timeoutMs: 500,
    });
    expect(status).toMatchObject({ timedOut: true, code: null, signal: "SIGTERM" });
  });

  it("control: a run that ends within its bound is not marked", async () => {
    const status = await runForeground({
      name: "quick",
      command: process.execPath,
      args: ["-e", "process.exit(3)"],
      timeoutMs: 10_000,
    });
    expect(status).toEqual({ timedOut: false, code: 3, signal: null });
  });
});

describe("the storm's watchdog", () => {
  const logDir = join(dir, "logs");
  const armed = (disarm: boolean) => `
    const { mkdirSync, writeFileSync } = require("node:fs");
    const { armStormWatchdog } = require(${JSON.stringify(join(projectRoot, "scripts/storm/watchdog.ts"))});
    const watchdog = armStormWatchdog({ boundMs: 300, exitCode: 2, write: (m) => process.stderr.write(m + "\\n") });
    mkdirSync(${JSON.stringify(logDir)}, { recursive: true });
    writeFileSync(${JSON.stringify(join(logDir, "app1.log"))}, "first line\\n[app1] the line before the hang\\n");
    watchdog.watchLogs(${JSON.stringify(logDir)});
    watchdog.step("starting the services");
    ${disarm ? "watchdog.disarm(); setTimeout(() => process.exit(0), 600);" : "setInterval(() => {}, 1000);"}
  `;

  it("past its bound, names the step, prints the end of each log and exits with its code", async () => {
    const result = await runTsx(["-e", armed(false)]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('still in step "starting the services"');
    expect(result.stderr).toContain("[app1] the line before the hang");
  });

  it("control: disarmed before its bound, it does nothing", async () => {
    const result = await runTsx(["-e", armed(true)]);
    expect(result.code).toBe(0);
    expect(result.stderr).not.toContain("still in step");
  });
});

describe("npm test cut short by a signal", () => {
  it("counts the suite it interrupted as failed and names it in the summary", async () => {
    let signalled = false;
    const result = await runTsx(["scripts/test.ts", "--only", "static"], (stderr, signal) => {
      // As CI's time limit does: SIGTERM to npm test while a suite runs.
      if (!signalled && stderr.includes("=== static ===")) {
        signalled = true;
        signal("SIGTERM");
      }
    });
    expect(signalled).toBe(true);
    expect(result.code).toBe(143);
    const lines = result.stdout.trimEnd().split("\n");
    const summary = lines.at(-1) ?? "";
    const failed = Number(/^\d+ passed, (\d+) failed, \d+ skipped$/.exec(summary)?.[1] ?? "0");
    expect(failed).toBeGreaterThanOrEqual(1);
    expect(lines).toContain("  static: did not finish (SIGTERM received)");
  }, 60_000);
});
