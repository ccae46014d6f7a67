/**
 * Case C30: every one-shot command-line tool that touches PostgreSQL or Redis (`npm run reconcile`, `npm run audit`,
 * `npm run users -- create`, `npm run db:migrate`) prints its result and exits on its own, after a reward credited
 * in the last 15 minutes made the reconciler's reward-counter repair (lib/rewards/repair-reward-counters.ts) open
 * the Redis client. Each tool runs as a real child process against the test stack; a deadline starts when its
 * result is on stdout, and a tool still running at the deadline is killed and fails the test.
 *
 * Negative control, kept runnable: {@link RECONCILE_WITHOUT_REDIS_CLOSE} is scripts/reconcile.ts's one pass as it ended
 * before the fix (the database closed, the Redis client left open); the same deadline check fails for it: it never
 * exits by itself.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { creditReward } from "@/lib/rewards/credit-reward";
import { redis } from "@/lib/redis";
import { createTestUser, testPool } from "../helpers/db";
import { startTestBank, stuckTopup, type TestBank } from "./reconciler-fixtures";

const projectRoot = fileURLToPath(new URL("../..", import.meta.url));
const tsxCli = join(projectRoot, "node_modules", "tsx", "dist", "cli.mjs");

/**
 * How long a tool may take to exit once its result is printed. Closing the pool and quitting Redis takes a few
 * milliseconds (16 to 240 ms measured here, migrate to reconcile); 3 s leaves room for a 2-core machine shared with other
 * test runs, and is still "a second or two" as a person at a terminal sees it, not the "never" of the bug.
 */
const EXIT_AFTER_RESULT_MS = 3000;

/** Longest wait for the result itself: tsx compiles the tool on first start (several seconds on a loaded machine). */
const RESULT_TIMEOUT_MS = 60_000;

interface ToolRun {
  /** Exit code, or null when the tool had to be killed at the deadline. */
  readonly code: number | null;
  /** True when the tool was still running {@link EXIT_AFTER_RESULT_MS} after its result and was killed. */
  readonly killedAtDeadline: boolean;
  /** From the result on stdout to the exit, in ms. */
  readonly exitAfterResultMs: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `node <nodeArgs>` with the test's environment plus `env`, waits for `isResult(stdout)` (the tool's result
 * printed), then gives it {@link EXIT_AFTER_RESULT_MS} to exit, and kills it (SIGKILL) past that. Rejects when no
 * result is printed within {@link RESULT_TIMEOUT_MS} (the child is killed).
 */
function runNode(
  nodeArgs: string[],
  isResult: (stdout: string) => boolean,
  options: { env?: Record<string, string>; input?: string } = {},
): Promise<ToolRun> {
  const what = nodeArgs.join(" ").slice(0, 200);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, nodeArgs, {
      cwd: projectRoot,
      env: { ...process.env, LOG_LEVEL: "warn", ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin.end(options.input ?? "");
    let stdout = "";
    let stderr = "";
    let resultAtMs: number | null = null;
    let killedAtDeadline = false;
    let deadline: NodeJS.Timeout | undefined;
    const noResult = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${what} printed no result within ${RESULT_TIMEOUT_MS} ms; stderr: ${stderr.slice(-2000)}`));
    }, RESULT_TIMEOUT_MS);
    child.stdout.setEncoding("utf8");
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.stdout.on("data", (chunk: string) => {
      stdout += chunk;
      if (resultAtMs !== null || !isResult(stdout)) return;
      resultAtMs = performance.now();
      clearTimeout(noResult);
      deadline = setTimeout(() => {
        killedAtDeadline = true;
        child.kill("SIGKILL");
      }, EXIT_AFTER_RESULT_MS);
    });
    child.once("exit", (code) => {
      clearTimeout(noResult);
      clearTimeout(deadline);
      const exitAfterResultMs = resultAtMs === null ? null : Math.round(performance.now() - resultAtMs);
      resolve({ code, killedAtDeadline, exitAfterResultMs, stdout, stderr });
    });
  });
}

/** Runs `scripts/<name>.ts args` as npm runs it (through tsx); see {@link runNode}. */
function runTool(
  name: "reconcile" | "audit" | "users" | "migrate",
  args: string[],
  isResult: (stdout: string) => boolean,
  options: { env?: Record<string, string>; input?: string } = {},
): Promise<ToolRun> {
  return runNode([tsxCli, join(projectRoot, "scripts", `${name}.ts`), ...args], isResult, options);
}

/**
 * The negative control's tool: scripts/reconcile.ts's one pass (`reconcileOnce` for the user given as the first
 * argument, its result printed as one JSON line) ending as it did before case C30 was fixed: the database pool closed,
 * the Redis client the reward-counter repair opened left as it is.
 */
const RECONCILE_WITHOUT_REDIS_CLOSE = `
const { closeDb } = require(${JSON.stringify(join(projectRoot, "lib", "db.ts"))});
const { reconcileOnce } = require(${JSON.stringify(join(projectRoot, "lib", "reconciler", "reconcile-once.ts"))});
reconcileOnce({ userIds: [process.argv[1]] })
  .then((result) => process.stdout.write(JSON.stringify(result) + "\\n"))
  .then(() => closeDb());
`;

/** The C30 assertion: the tool printed its result, exited by itself within the deadline, with `code`. */
function expectExitedInTime(run: ToolRun, code: number): void {
  expect(run.killedAtDeadline, `still running ${EXIT_AFTER_RESULT_MS} ms after its result; stderr: ${run.stderr}`).toBe(
    false,
  );
  expect(run.exitAfterResultMs).not.toBeNull();
  expect(run.exitAfterResultMs!).toBeLessThan(EXIT_AFTER_RESULT_MS);
  expect(run.code, run.stderr).toBe(code);
}

/** A JSON line ended by a newline: the shape reconcile and audit print their result in. */
const jsonLinePrinted = (stdout: string) => /^\{.*\}\n$/m.test(stdout);

let bank: TestBank;
let userId = "";

beforeAll(async () => {
  bank = await startTestBank();
  const user = await createTestUser();
  userId = user.id;
  // A reward credited now: its day row changed in the last 15 minutes, so the reconciler's counter repair reads it
  // and opens Redis; the Redis counter exists too. Then a stuck top-up, so the pass and the audit touch the bank too.
  const rewarded = await creditReward({ userId, adId: "ad-c30" });
  expect(rewarded.kind).toBe("response");
  await stuckTopup(userId, { amountMinor: 420, chargeAt: bank.url });
  const counters = await redis()!.keys(`*${userId}*`);
  expect(counters.length).toBeGreaterThan(0);
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

describe("C30: a one-shot command exits by itself once its result is printed, after touching PostgreSQL and Redis", () => {
  it("npm run reconcile (one pass over a user with a reward credited in the last 15 minutes)", async () => {
    const run = await runTool("reconcile", ["--user", userId], jsonLinePrinted, {
      env: { BANK_URL: bank.url },
    });
    expectExitedInTime(run, 0);
    expect(JSON.parse(run.stdout)).toMatchObject({ examined: 1, completed: 1 });
  });

  it("npm run audit", async () => {
    const run = await runTool("audit", ["--user", userId], jsonLinePrinted, {
      env: { BANK_URL: bank.url },
    });
    // The stuck top-up is credited by the test above or still unfinished: either way the audit ran and printed.
    expect(JSON.parse(run.stdout)).toHaveProperty("checks");
    expectExitedInTime(run, run.code === 1 ? 1 : 0);
  });

  it("npm run users -- create --token", async () => {
    const email = `c30-${randomUUID()}@example.test`;
    const run = await runTool(
      "users",
      ["create", "--email", email, "--password-stdin", "--token"],
      (stdout) => /^wlt_\S+\n$/m.test(stdout),
      { input: "correct horse battery staple\n" },
    );
    expectExitedInTime(run, 0);
    const created = await testPool().query(`SELECT 1 FROM "user" WHERE email = $1`, [email]);
    expect(created.rowCount).toBe(1);
  });

  it("npm run db:migrate (nothing left to apply)", async () => {
    const run = await runTool("migrate", [], (stdout) => /\d+ applied, \d+ already applied\n$/.test(stdout));
    expectExitedInTime(run, 0);
  });

  it("negative control: the one pass with the Redis client left open never exits, and fails the same check", async () => {
    const run = await runNode(["--import", "tsx", "-e", RECONCILE_WITHOUT_REDIS_CLOSE, userId], jsonLinePrinted, {
      env: { BANK_URL: bank.url },
    });
    expect(run.killedAtDeadline).toBe(true);
    expect(() => expectExitedInTime(run, 0)).toThrow();
  });
});
