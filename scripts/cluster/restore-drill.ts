/**
 * `npm run cluster -- --restore-drill`: backups you can restore, shown end to end.
 *
 * 1. Starts the cluster (scripts/lib/ha-cluster.ts) with WAL archiving to a pgBackRest 2.45 repository and takes a
 *    full base backup.
 * 2. Runs the storm's traffic (users with API tokens, duplicates, retries) against it through HAProxy, and takes
 *    a point in time T from the primary's clock halfway through.
 * 3. Restores the backup to a new PostgreSQL 15 node, to T (`pgbackrest restore --type=time`), and promotes it.
 * 4. Checks the restored ledger: every operation whose 2xx a client received before T is there with the exact
 *    response it received; no operation first sent after T is there.
 * 5. Starts the app on the restored node (with its own empty Redis), runs the reconciler against the bank (the
 *    bank is the truth: charges made after T are credited from it), and runs the audit of contract section 7.
 * Exits 0 when every check passes, 1 otherwise, 2 when it cannot run. Everything stops on the way out.
 */
import { spawnSync } from "node:child_process";
import { chownSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Agent } from "node:http";
import pg from "pg";
import { freePort, sleep, waitForHttp } from "../lib/ports";
import { registerCleanup, spawnService, type Service } from "../lib/processes";
import { missingClusterPackages, PG15_BIN, runPgBackRest, startHaCluster } from "../lib/ha-cluster";
import { startRedisServer } from "../lib/redis-server";
import { ensureBuilt, projectRoot, spawnApp } from "../lib/stack";
import { createAgent } from "../storm/http-client";
import type { OperationRecord, TrafficCounters } from "../storm/observations";
import { attemptKey } from "../storm/observations";
import { runTraffic, type StormUser } from "../storm/traffic";

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_CANNOT_RUN = 2;

/** 40 users for 40 s: a few thousand operations, enough that T falls among hundreds of acknowledged ones. */
const DRILL_USERS = 40;
const DRILL_TRAFFIC_MS = 40_000;
/** The restored node has 5 minutes to replay WAL to T and promote (it takes seconds here). */
const RECOVERY_TIMEOUT_MS = 300_000;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** Runs the drill; see the file's comment. Returns the exit code. */
export async function runRestoreDrill(options: { pooler: boolean }): Promise<number> {
  const missing = missingClusterPackages({ pooler: options.pooler, backups: true });
  if (missing.length > 0) {
    say(`the restore drill needs apt packages that are missing: ${missing.join(" ")}`);
    say(`install them with: apt-get install -y ${missing.join(" ")}`);
    return EXIT_CANNOT_RUN;
  }
  ensureBuilt();
  const logDir = join(projectRoot, "reports", "cluster-logs", "restore-drill");
  say("starting the cluster with WAL archiving to pgBackRest...");
  const cluster = await startHaCluster({ appInstances: 1, pooler: options.pooler, backups: true, logDir });
  const started: Service[] = [];
  const extraStops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    await Promise.all(started.map((service) => service.stop()));
    await Promise.all(extraStops.map((stop) => stop()));
    await cluster.stop();
  };
  const unregister = registerCleanup(stopAll);
  const agents: Agent[] = [createAgent(), createAgent()];
  try {
    const config = cluster.pgbackrestConfig!;
    const backupStartedMs = Date.now();
    runPgBackRest(config, ["--type=full", "backup"]);
    say(`full backup taken in ${((Date.now() - backupStartedMs) / 1000).toFixed(1)} s`);

    process.env.DATABASE_URL = cluster.adminDatabaseUrl;
    process.env.BETTER_AUTH_SECRET = cluster.authSecret;
    const users = await createDrillUsers(DRILL_USERS);
    const operations: OperationRecord[] = [];
    const counters: TrafficCounters = { operations: 0, requests: 0, responses: 0, failures: 0 };
    const trafficStartMs = Date.now();
    const traffic = runTraffic({
      users,
      appUrls: [cluster.appUrl, cluster.appUrl],
      agents,
      seed: 11,
      deadlineMs: trafficStartMs + DRILL_TRAFFIC_MS,
      hardStopMs: trafficStartMs + DRILL_TRAFFIC_MS + 20_000,
      operations,
      counters,
    });
    await sleep(DRILL_TRAFFIC_MS / 2);
    // T is the primary's clock, the clock the restore target is compared with; the machine shares it.
    const targetTime = await queryOne<{ t: string }>(cluster.adminDatabaseUrl, "SELECT now()::text AS t");
    const targetMs = Date.now();
    say(`point in time T = ${targetTime.t} (${((targetMs - trafficStartMs) / 1000).toFixed(1)} s into the traffic)`);
    await traffic;
    // Close the WAL segment holding T so it is archived (archive_timeout would within 10 s anyway).
    await queryOne(cluster.adminDatabaseUrl, "SELECT pg_switch_wal()::text AS t");
    await sleep(3000);
    runPgBackRest(config, ["check"]);

    const restoreDir = join(cluster.root, "restored");
    mkdirSync(restoreDir, { recursive: true, mode: 0o700 });
    chownToPostgres(restoreDir);
    const restoreStartedMs = Date.now();
    runPgBackRest(config, [
      `--pg1-path=${restoreDir}`,
      "--type=time",
      `--target=${targetTime.t}`,
      "--target-action=promote",
      "restore",
    ]);
    const port = await freePort();
    const socketDir = join(cluster.root, "sockets");
    const restored = spawnService({
      name: "pg-restored",
      command: "setpriv",
      args: [
        "--reuid=postgres",
        "--regid=postgres",
        "--init-groups",
        `${PG15_BIN}/postgres`,
        "-D",
        restoreDir,
        "-c",
        `port=${port}`,
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        `unix_socket_directories=${socketDir}`,
        // A lone node: no standby to wait for, no archive of its own (it must not write into the drill's repo).
        "-c",
        "synchronous_standby_names=",
        "-c",
        "archive_mode=off",
        "-c",
        "hot_standby=on",
      ],
      log: join(logDir, "pg-restored.log"),
    });
    started.push(restored);
    const restoredUrl = new URL(cluster.adminDatabaseUrl);
    restoredUrl.port = String(port);
    await waitPromoted(restoredUrl.toString());
    say(`restored to T and promoted in ${((Date.now() - restoreStartedMs) / 1000).toFixed(1)} s`);

    const pointInTime = await checkPointInTime(restoredUrl.toString(), operations, targetMs);
    say(
      `point in time: ${pointInTime.acknowledgedBefore} operations acknowledged before T, ${pointInTime.missing.length} missing; ` +
        `${pointInTime.sentAfter} first sent after T, ${pointInTime.present.length} present`,
    );

    // The app on the restored node, with its own empty Redis (the cluster's counters belong to the live data).
    const redis = await startRedisServer({ log: join(logDir, "redis-restored.log") });
    extraStops.push(redis.stop);
    const appPort = await freePort();
    const appEnvironment = cluster.appEnvironment(appPort);
    const appDatabaseUrl = new URL(appEnvironment.DATABASE_URL!);
    if (options.pooler) {
      // Behind the pooler the app's URL points at PgBouncer; on the restored node it talks to PostgreSQL directly.
      appDatabaseUrl.hostname = "127.0.0.1";
    }
    appDatabaseUrl.port = String(port);
    const app = spawnApp({
      name: "app-restored",
      port: appPort,
      env: {
        ...appEnvironment,
        DATABASE_URL: appDatabaseUrl.toString(),
        DB_POOLER: "none",
        REDIS_CLUSTER_NODES: "",
        REDIS_URL: redis.url,
        APP_URL: `http://127.0.0.1:${appPort}`,
        BETTER_AUTH_URL: `http://127.0.0.1:${appPort}`,
      },
      log: join(logDir, "app-restored.log"),
    });
    started.push(app);
    await waitForHttp(`http://127.0.0.1:${appPort}/api/v1/health`, 60_000);
    say(`the app serves the restored data on http://127.0.0.1:${appPort}`);

    const reconcile = runCli("scripts/reconcile.ts", [], restoredUrl.toString(), cluster.bankUrl, redis.url);
    const audit = runCli("scripts/audit.ts", [], restoredUrl.toString(), cluster.bankUrl, redis.url);
    say(
      `reconciler pass on the restored data: exit ${reconcile.status}: ${reconcile.stdout.trim().split("\n").at(-1) ?? ""}`,
    );
    say(`audit on the restored data: exit ${audit.status}`);
    process.stdout.write(`${audit.stdout}\n`);

    const ok = pointInTime.missing.length === 0 && pointInTime.present.length === 0 && audit.status === 0;
    const summary = [
      "",
      `restore drill: ${ok ? "PASSED" : "FAILED"}`,
      `  traffic: ${counters.operations} operations, ${counters.requests} requests through HAProxy`,
      `  restored to T = ${targetTime.t}`,
      `  acknowledged before T: ${pointInTime.acknowledgedBefore}, all present with the response the client got: ${pointInTime.missing.length === 0 ? "yes" : `no (${pointInTime.missing.length} missing: ${pointInTime.missing.slice(0, 5).join(", ")})`}`,
      `  first sent after T: ${pointInTime.sentAfter}, none present: ${pointInTime.present.length === 0 ? "yes" : `no (${pointInTime.present.slice(0, 5).join(", ")})`}`,
      `  app started on the restored node; reconciler exit ${reconcile.status}; audit exit ${audit.status}`,
    ];
    process.stdout.write(`${summary.join("\n")}\n`);
    return ok ? EXIT_OK : EXIT_FAILED;
  } finally {
    for (const agent of agents) agent.destroy();
    const [{ closeDb }, { closeRedis }] = await Promise.all([import("../../lib/db"), import("../../lib/redis")]);
    await closeDb();
    await closeRedis();
    await stopAll();
    unregister();
  }
}

async function createDrillUsers(count: number): Promise<StormUser[]> {
  const { createApiTokenOrThrow } = await import("../../lib/api-tokens/create-api-token");
  const { pool } = await import("../../lib/db");
  const users: StormUser[] = [];
  for (let index = 0; index < count; index++) {
    const id = `drill_${Date.now().toString(36)}_${index}`;
    await pool().query(`INSERT INTO "user" ("id", "name", "email", "role") VALUES ($1, $2, $3, 'user')`, [
      id,
      `Drill user ${index}`,
      `${id}@drill.test`,
    ]);
    const { token } = await createApiTokenOrThrow({ userId: id, name: "drill" });
    users.push({ index, id, token });
  }
  return users;
}

async function queryOne<R extends pg.QueryResultRow>(url: string, sql: string): Promise<R> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows[0]!;
  } finally {
    await client.end().catch(() => {});
  }
}

async function waitPromoted(url: string): Promise<void> {
  const deadline = Date.now() + RECOVERY_TIMEOUT_MS;
  for (;;) {
    try {
      const row = await queryOne<{ recovering: boolean }>(url, "SELECT pg_is_in_recovery() AS recovering");
      if (!row.recovering) return;
    } catch {
      // Still starting or replaying.
    }
    if (Date.now() > deadline) throw new Error(`the restored node did not promote within ${RECOVERY_TIMEOUT_MS} ms`);
    await sleep(500);
  }
}

/**
 * Compares what the clients saw with the restored ledger: a key whose first 2xx arrived before `targetMs` must be
 * there with that exact response; a key whose first request was sent after `targetMs` must not be there.
 */
async function checkPointInTime(
  url: string,
  operations: readonly OperationRecord[],
  targetMs: number,
): Promise<{ acknowledgedBefore: number; missing: string[]; sentAfter: number; present: string[] }> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  await client.connect();
  try {
    const rows = await client.query<{ key: string; response_status: number | null; response_body: string | null }>(
      `SELECT user_id || '|' || type || '|' || ref_id AS key, response_status, response_body FROM ledger_entries`,
    );
    const byKey = new Map(rows.rows.map((row) => [row.key, row]));
    const firstSent = new Map<string, number>();
    const firstAcknowledged = new Map<string, { atMs: number; status: number; body: string }>();
    for (const operation of operations) {
      for (const attempt of operation.attempts) {
        if (attempt.probe) continue;
        const key = attemptKey(operation, attempt);
        firstSent.set(key, Math.min(firstSent.get(key) ?? Number.POSITIVE_INFINITY, attempt.sentAtMs));
        const outcome = attempt.outcome;
        const answeredAtMs = attempt.sentAtMs + attempt.durationMs;
        if (outcome.kind === "response" && outcome.status >= 200 && outcome.status < 300) {
          const known = firstAcknowledged.get(key);
          if (!known || answeredAtMs < known.atMs)
            firstAcknowledged.set(key, { atMs: answeredAtMs, status: outcome.status, body: outcome.body });
        }
      }
    }
    const missing: string[] = [];
    let acknowledgedBefore = 0;
    for (const [key, acknowledged] of firstAcknowledged) {
      if (acknowledged.atMs >= targetMs) continue;
      acknowledgedBefore += 1;
      const row = byKey.get(key);
      if (!row || row.response_status !== acknowledged.status || row.response_body !== acknowledged.body)
        missing.push(key);
    }
    const present: string[] = [];
    let sentAfter = 0;
    for (const [key, sentAtMs] of firstSent) {
      if (sentAtMs <= targetMs) continue;
      sentAfter += 1;
      if (byKey.has(key)) present.push(key);
    }
    return { acknowledgedBefore, missing, sentAfter, present };
  } finally {
    await client.end().catch(() => {});
  }
}

function runCli(
  script: string,
  args: string[],
  databaseUrl: string,
  bankUrl: string,
  redisUrl: string,
): { status: number | null; stdout: string } {
  const result = spawnSync(process.execPath, ["--import", "tsx", script, ...args], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: databaseUrl, BANK_URL: bankUrl, REDIS_URL: redisUrl, REDIS_CLUSTER_NODES: "" },
    encoding: "utf8",
    timeout: 300_000,
  });
  return { status: result.status, stdout: `${result.stdout}` };
}

function chownToPostgres(path: string): void {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  if (!line) return;
  const fields = line.split(":");
  chownSync(path, Number(fields[2]), Number(fields[3]));
}
