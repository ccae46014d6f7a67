/**
 * `npm run reconcile` and `npm run audit` (scripts/reconcile.ts, scripts/audit.ts) run as real child processes
 * against the test database and a real sandbox bank: stdout is the JSON result, and the exit codes are the
 * contract's (section 4): 0 all good, 1 something to look at (a violation; anomalies or an unreachable bank for
 * the reconciler), 2 cannot run. Every run is limited to the test's own user with `--user`.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "@/scripts/lib/ports";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf } from "../helpers/ledger";
import { startTestBank, stuckTopup, type TestBank } from "./reconciler-fixtures";

const projectRoot = fileURLToPath(new URL("../..", import.meta.url));
const tsxCli = join(projectRoot, "node_modules", "tsx", "dist", "cli.mjs");

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `scripts/<script>.ts args` with the test's environment plus `env` (undefined removes a variable). */
function run(
  script: "reconcile" | "audit",
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<RunResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: "warn" };
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete childEnv[name];
    else childEnv[name] = value;
  }
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [tsxCli, join(projectRoot, "scripts", `${script}.ts`), ...args],
      // 60 s: tsx compiles on first start; a pass takes well under a second.
      { cwd: options.cwd ?? projectRoot, env: childEnv, timeout: 60_000 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") {
          reject(error);
          return;
        }
        resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
      },
    );
  });
}

let bank: TestBank;
let emptyDir = "";

beforeAll(async () => {
  bank = await startTestBank();
  emptyDir = mkdtempSync(join(tmpdir(), "reconcile-cli-"));
});

afterAll(async () => {
  await bank?.stop();
  if (emptyDir) rmSync(emptyDir, { recursive: true, force: true });
});

describe("npm run reconcile", () => {
  it("exit 0 with the pass's JSON on stdout when it settles a stuck row", async () => {
    const user = await createTestUser();
    await stuckTopup(user.id, { amountMinor: 610, chargeAt: bank.url });
    const result = await run("reconcile", ["--user", user.id], { env: { BANK_URL: bank.url } });
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout.trim())).toEqual({ examined: 1, completed: 1, failed: 0, redriven: 0, skipped: 0 });
    expect(await balanceOf(user.id)).toBe(610);
  });

  it("exit 1 when the bank is unreachable (the row is left and reported)", async () => {
    const user = await createTestUser();
    await stuckTopup(user.id, { chargeAt: bank.url });
    const result = await run("reconcile", ["--user", user.id], {
      env: { BANK_URL: `http://127.0.0.1:${await freePort()}` },
    });
    expect(result.code, result.stderr).toBe(1);
    expect(JSON.parse(result.stdout.trim())).toMatchObject({ completed: 0, bankUnreachable: { rowsLeft: 1 } });
  });

  it("exit 2 without a database to find (no DATABASE_URL, no running demo) and on bad arguments", async () => {
    const missing = await run("reconcile", [], { cwd: emptyDir, env: { DATABASE_URL: undefined } });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no running demo");
    expect((await run("reconcile", ["--frobnicate"])).code).toBe(2);
    expect((await run("reconcile", ["--user", "a:b"])).code).toBe(2);
  });
});

describe("npm run reconcile -- --watch", () => {
  it("prints one JSON line per pass, runs passes one after another, and exits 0 on SIGINT", async () => {
    const user = await createTestUser();
    await stuckTopup(user.id, { amountMinor: 75, chargeAt: bank.url });
    const child = spawn(
      process.execPath,
      [tsxCli, join(projectRoot, "scripts", "reconcile.ts"), "--watch", "--user", user.id],
      {
        cwd: projectRoot,
        // 200 ms between passes: a few passes within a second, each one visible as its own line.
        env: { ...process.env, LOG_LEVEL: "warn", BANK_URL: bank.url, RECONCILE_INTERVAL_MS: "200" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const lines: string[] = [];
    let pending = "";
    const twoPasses = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`fewer than two passes within 30 s: ${JSON.stringify(lines)}`)),
        30_000,
      );
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => {
        pending += chunk;
        const parts = pending.split("\n");
        pending = parts.pop() ?? "";
        lines.push(...parts.filter((line) => line.length > 0));
        if (lines.length >= 2) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    await twoPasses;
    child.kill("SIGINT");
    expect(await exited).toBe(0);
    expect(JSON.parse(lines[0]!)).toMatchObject({ examined: 1, completed: 1 });
    expect(JSON.parse(lines[1]!)).toEqual({ examined: 0, completed: 0, failed: 0, redriven: 0, skipped: 0 });
    expect(await balanceOf(user.id)).toBe(75);
  });
});

describe("npm run audit", () => {
  it("exit 0 when every invariant holds, 1 after a balance is bumped by SQL", async () => {
    const user = await createTestUser();
    await stuckTopup(user.id, { amountMinor: 330, chargeAt: bank.url });
    expect((await run("reconcile", ["--user", user.id], { env: { BANK_URL: bank.url } })).code).toBe(0);

    const clean = await run("audit", ["--user", user.id], { env: { BANK_URL: bank.url } });
    expect(clean.code, clean.stderr).toBe(0);
    expect(JSON.parse(clean.stdout.trim())).toMatchObject({ ok: true });

    await testPool().query("UPDATE wallets SET balance_minor = balance_minor + 5 WHERE user_id = $1", [user.id]);
    const violated = await run("audit", ["--user", user.id], { env: { BANK_URL: bank.url } });
    expect(violated.code).toBe(1);
    const report = JSON.parse(violated.stdout.trim()) as { ok: boolean; checks: Array<{ name: string; ok: boolean }> };
    expect(report.ok).toBe(false);
    expect(report.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual([
      "balance_matches_ledger",
      "wallet_accounts_match",
    ]);
  });

  it("exit 2 when it cannot run: no database to find, or a database that does not answer", async () => {
    const missing = await run("audit", [], { cwd: emptyDir, env: { DATABASE_URL: undefined } });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no running demo");
    const down = await run("audit", [], {
      env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/wallet` },
    });
    expect(down.code).toBe(2);
    expect(down.stderr).toContain("audit cannot run");
  });
});
