/**
 * `npm start`, run as an operator runs it: the production server against the database and Redis it is
 * given, nothing embedded. It refuses a database with unapplied migrations and a missing secret, naming each,
 * before anything listens; once `npm run db:migrate` has run and the secret is set it serves the health route,
 * runs the reconciler (a top-up whose bank sends no webhook is finished by it), and stops cleanly on SIGTERM.
 * `--migrate` applies the migrations itself.
 *
 * Each test gets its own empty database on the test stack's server and its own sandbox bank (free port, no
 * webhooks at all); the stack's Redis; the current build (`npm test` builds it first). Nothing else of the stack
 * is touched. Every wait has a deadline and afterAll stops what is left, so a failure cannot hang the run.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { promisify } from "node:util";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readMigrationFiles } from "../../lib/migrate";
import { freePort, isPortFree, sleep, waitForHttp } from "../../scripts/lib/ports";
import { signalGroup, spawnService, type Service, type ServiceExit } from "../../scripts/lib/processes";
import { randomAuthSecret } from "../../scripts/lib/secrets";
import { projectRoot, startBank, type RunningBank } from "../../scripts/lib/stack";
import { createScratchDatabase, dropScratchDatabases } from "../helpers/db";
import { testStack } from "../helpers/stack";
import { waitFor } from "../helpers/wait";

/**
 * Bounds, far above what each takes on an idle 2-core machine (npm and tsx start in ~2 s, the checks take well
 * under a second, `next start` listens in ~1 s), all finite so a broken start fails instead of hanging.
 */
const RUN_TIMEOUT_MS = 90_000;
/** The reconciler runs every second here; a pending charge succeeds 200 ms after it is made. */
const RECONCILED_TIMEOUT_MS = 60_000;

const started: Service[] = [];
let bank: RunningBank | null = null;
let bankStateDir = "";

/** Settings of an `npm start` against `databaseUrl`: only what the test gives, nothing of the test stack's. */
function startEnvironment(databaseUrl: string, port: number, extra: Record<string, string> = {}) {
  return {
    NODE_ENV: "production" as const,
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? tmpdir(),
    DATABASE_URL: databaseUrl,
    REDIS_URL: testStack().redisUrl,
    PORT: String(port),
    BANK_URL: bank!.url,
    BANK_WEBHOOK_SECRETS: testStack().webhookSecrets,
    SMTP_URL: testStack().smtpUrl ?? "",
    LOG_LEVEL: "warn",
    ...extra,
  };
}

/** Runs `npm <args>` in the project as its own process group; output kept for assertions and in reports/. */
function npm(name: string, args: string[], env: Record<string, string>): Service {
  const service = spawnService({
    name,
    command: "npm",
    args,
    cwd: projectRoot,
    env,
    log: join(projectRoot, "reports", "stack-logs", `${name}.log`),
  });
  started.push(service);
  return service;
}

async function exitOf(service: Service, timeoutMs: number): Promise<ServiceExit> {
  const outcome = await Promise.race([service.exited, sleep(timeoutMs).then(() => null)]);
  if (!outcome) throw new Error(`${service.name} did not exit within ${timeoutMs} ms:\n${service.recentOutput()}`);
  return outcome;
}

/**
 * Starts `npm start` and resolves once it says it serves (its last start-up line, after the reconciler's) and
 * its health route answers 200. Throws when it exits first or takes longer than {@link RUN_TIMEOUT_MS}.
 */
async function serve(name: string, args: string[], env: Record<string, string>): Promise<Service> {
  const server = npm(name, ["start", ...args], env);
  await waitFor(
    () => {
      if (server.exitStatus()) throw new Error(`npm start exited:\n${server.recentOutput()}`);
      return server.recentOutput().includes("wallet serving on");
    },
    (serving) => serving,
    { what: "npm start to serve", timeoutMs: RUN_TIMEOUT_MS, intervalMs: 200 },
  );
  await waitForHttp(`http://127.0.0.1:${env.PORT}/api/v1/health`, RUN_TIMEOUT_MS);
  return server;
}

async function appliedMigrations(databaseUrl: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const rows = await client.query<{ name: string }>("SELECT name FROM _schema_migrations ORDER BY name");
    return rows.rows.map((row) => row.name);
  } finally {
    await client.end();
  }
}

const execFileAsync = promisify(execFile);
const migrationNames = readMigrationFiles().map((file) => file.name);

beforeAll(async () => {
  bankStateDir = await mkdtemp(join(tmpdir(), "start-test-bank-"));
  bank = await startBank({
    env: {
      BANK_STATE_FILE: join(bankStateDir, "bank-state.json"),
      BANK_WEBHOOK_SECRETS: testStack().webhookSecrets,
      APP_URL: "http://127.0.0.1:9",
      // No webhook ever: what a top-up leaves pending, only a reconciler can finish.
      BANK_FAULT_NOHOOK_RATE: "1",
    },
  });
}, 60_000);

afterAll(async () => {
  for (const service of started) if (!service.exitStatus()) signalGroup(service.pid, "SIGKILL");
  await Promise.all(started.map((service) => service.stop()));
  await bank?.stop();
  if (bankStateDir) await rm(bankStateDir, { recursive: true, force: true });
  await dropScratchDatabases();
}, 60_000);

describe("npm start", () => {
  it(
    "refuses unapplied migrations and a missing secret, naming each; then serves, reconciles and stops on SIGTERM",
    async () => {
      const databaseUrl = await createScratchDatabase("start_test");
      const port = await freePort();
      const env = startEnvironment(databaseUrl, port, { RECONCILE_INTERVAL_MS: "1000", LEASE_MS: "1000" });

      const refused = npm("start-refused", ["start"], { ...env, SMTP_URL: "" });
      expect((await exitOf(refused, RUN_TIMEOUT_MS)).code, refused.recentOutput()).toBe(1);
      const output = refused.recentOutput();
      expect(output).toContain("refusing to start");
      for (const name of migrationNames) expect(output).toContain(name);
      expect(output).toMatch(/BETTER_AUTH_SECRET[^\n]*missing/);
      // No mail server and mail not switched off (docs/decisions/054).
      expect(output).toMatch(/SMTP_URL is missing[^\n]*MAIL_DELIVERY=off/);
      expect(await isPortFree(port), "npm start listened although it refused").toBe(true);

      const migrated = npm("start-db-migrate", ["run", "db:migrate"], { ...env });
      expect((await exitOf(migrated, RUN_TIMEOUT_MS)).code, migrated.recentOutput()).toBe(0);
      expect(await appliedMigrations(databaseUrl)).toEqual(migrationNames);

      // Each check on its own: migrated, still no secret: refused for the secret alone.
      const stillRefused = npm("start-refused-secret", ["start"], env);
      expect((await exitOf(stillRefused, RUN_TIMEOUT_MS)).code, stillRefused.recentOutput()).toBe(1);
      expect(stillRefused.recentOutput()).toMatch(/BETTER_AUTH_SECRET[^\n]*missing/);
      expect(stillRefused.recentOutput()).not.toContain("SMTP_URL");
      for (const name of migrationNames) expect(stillRefused.recentOutput()).not.toContain(name);

      const server = await serve("start-served", [], { ...env, BETTER_AUTH_SECRET: randomAuthSecret() });
      const health = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
      expect(await health.json()).toEqual({ db: "ok", redis: "ok" });
      expect(server.recentOutput()).toContain("reconciler: a pass every 1000 ms");
      // The production server runs with its heap bound (decision 051), APP_HEAP_MB's default here.
      expect(server.recentOutput()).toContain("next-server heap: --max-old-space-size=768 --max-semi-space-size=16");

      // The reconciler runs: the bank never sends this top-up's webhook, so only a reconciler pass can finish it.
      const email = `start-${randomBytes(4).toString("hex")}@example.test`;
      const created = await execFileAsync(
        "npm",
        ["run", "-s", "users", "--", "create", "--email", email, "--password", "start-test-password", "--token"],
        { cwd: projectRoot, env, timeout: RUN_TIMEOUT_MS },
      );
      const token = created.stdout.trim().split("\n").at(-1)!;
      const refId = `start-${randomBytes(4).toString("hex")}`;
      const topup = await fetch(`http://127.0.0.1:${port}/api/v1/topups`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ refId, amount: 500 }),
      });
      expect(topup.status, await topup.clone().text()).toBe(201);
      const status = await waitFor(
        async () => {
          const current = await fetch(`http://127.0.0.1:${port}/api/v1/topups/${refId}`, {
            headers: { authorization: `Bearer ${token}` },
          });
          return ((await current.json()) as { topup: { status: string } }).topup.status;
        },
        (read) => read === "succeeded",
        { what: `the reconciler to finish top-up ${refId}`, timeoutMs: RECONCILED_TIMEOUT_MS, intervalMs: 500 },
      );
      expect(status).toBe("succeeded");

      // SIGTERM to npm alone, as a container runtime sends it to its first process: a clean stop, exit 0.
      process.kill(server.pid, "SIGTERM");
      expect(await exitOf(server, RUN_TIMEOUT_MS)).toEqual({ code: 0, signal: null });
      expect(await isPortFree(port)).toBe(true);
    },
    8 * RUN_TIMEOUT_MS + RECONCILED_TIMEOUT_MS,
  );

  it(
    "applies pending migrations itself with --migrate",
    async () => {
      const databaseUrl = await createScratchDatabase("start_test");
      const port = await freePort();
      const env = startEnvironment(databaseUrl, port, { BETTER_AUTH_SECRET: randomAuthSecret() });
      const server = await serve("start-migrate", ["--", "--migrate", "--no-reconciler"], env);
      expect(await appliedMigrations(databaseUrl)).toEqual(migrationNames);
      expect(server.recentOutput()).toContain("reconciler: off (--no-reconciler)");
      process.kill(server.pid, "SIGTERM");
      expect(await exitOf(server, RUN_TIMEOUT_MS)).toEqual({ code: 0, signal: null });
    },
    3 * RUN_TIMEOUT_MS,
  );
});
