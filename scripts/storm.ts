/**
 * `npm run storm`: thousands of overlapping wallet operations from simulated users against two app instances that
 * share one PostgreSQL and one Redis, with the sandbox bank duplicating, reordering and losing things, one app
 * instance SIGKILLed and restarted mid-run and Redis restarted once; then the reconciler until nothing is left, the
 * audit of contract section 7 and the client-side checks. The bank's reorder switch plays case C14 (a stale
 * `charge.failed` first, the success held back), every 8th user starts just under MAX_BALANCE_MINOR (case C15), and
 * invariant 6 (every succeeded charge credited exactly once) is checked against the bank's own list. An admin refunds
 * a share of the acknowledged top-ups (partial, full, duplicated, over-refunds that must be refused), and some
 * top-ups carry the sandbox's dispute switches, so chargebacks, reversals and debts happen during traffic (contract
 * sections 11 and 12). Users also withdraw to a sandbox account with every payout switch but the always-503 one
 * (section 14) and send each other transfers, some crossing at the same moment, some to unknown addresses or to
 * themselves (refused; section 15); the storm waits for the bank to settle and return its payouts before the final
 * passes, and holds wallets, held money and the bank's payouts to the money in. Prints a summary table; exits 0 when
 * every invariant holds, 1 on any violation, 2 when the storm could not run (bad flags, a service that did not start).
 *
 * Loopback only, bounded in time (--duration, default 110 s of traffic, ~2.5 min in all), and it
 * stops everything it started on every path (Ctrl-C included). `--short` is the CI variant (~30 s).
 *
 *   npm run storm                      # 200 users, 110 s of traffic
 *   npm run storm -- --short           # CI: 40 users, 18 s of traffic
 *   npm run storm -- --users 500 --duration 300 --seed 42
 *   npm run storm -- --short --negative-control   # corrupts its own database on purpose: must exit 1
 */
import { randomBytes, randomInt } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Agent } from "node:http";
import cliProgress from "cli-progress";
import pg from "pg";
import { sleep, waitForHttp } from "./lib/ports";
import { registerCleanup } from "./lib/processes";
import { ensureBuilt, projectRoot } from "./lib/stack";
import { exitWithHelpIfAsked } from "./lib/cli-help";
import { runClientChecks, type BankPayoutSeen, type CheckResult, type LedgerRow } from "./storm/client-checks";
import {
  drainWebhooks,
  readBankCharges,
  readBankDisputes,
  readBankPayouts,
  readLedgerRows,
  reconcileUntilQuiet,
  runContractAudit,
  waitForBankPayouts,
  type DrainResult,
  type FinalReconcile,
  type PayoutSettleResult,
} from "./storm/finish";
import { createAgent, postControl } from "./storm/http-client";
import type { OperationRecord, TrafficCounters } from "./storm/observations";
import { parseStormOptions, StormUsageError, USAGE, type StormOptions } from "./storm/options";
import {
  givenServices,
  startOwnServices,
  STORM_FAULT_RATES,
  STORM_SETTINGS,
  type StormServices,
} from "./storm/services";
import { renderChecks, renderTotals, totalsByKind } from "./storm/summary";
import { startClusterStorm, type ClusterStorm, type FaultReport } from "./storm/cluster-faults";
import { CPU_ROLES, type CpuByRole, cpuMsPerRequest, sampleCpu } from "./storm/cpu-by-role";
import { missingClusterPackages } from "./lib/ha-cluster";
import { RACED_REFUND_PREFIX, runTraffic, type StormUser } from "./storm/traffic";
import { armStormWatchdog, type StormWatchdog } from "./storm/watchdog";

const EXIT_OK = 0;
const EXIT_VIOLATION = 1;
const EXIT_CANNOT_RUN = 2;

/** STUCK_AFTER_S of the storm's own audit, in seconds (see where it is set). */
const STORM_AUDIT_STUCK_AFTER_S = "5";

/** Two instances: the smallest number that shows the app is stateless (two `next start` instances). */
const APP_INSTANCES = 2;

/**
 * After the traffic deadline, in-flight operations may keep retrying for 25 s at most: a request's retries span
 * about 3-8 s, plus one 10 s client timeout; past this bound they are abandoned (and recorded as such).
 */
const RETRY_GRACE_MS = 25_000;
/** The cluster storm's clients retry for up to ~30 s (CLUSTER_CLIENT_RETRY) plus one 10 s timeout. */
const CLUSTER_RETRY_GRACE_MS = 45_000;

/** The staged crash: the second instance is SIGKILLed at 35% of the traffic phase and stays down 2 s. */
const APP_CRASH_AT_FRACTION = 0.35;
const APP_DOWN_MS = 2000;
/** Redis is SIGKILLed and restarted empty at 60% of the phase, after the app instance is back. */
const REDIS_RESTART_AT_FRACTION = 0.6;

/** Running instances given by URL must answer their health route within 10 s (they are already up). */
const GIVEN_READY_TIMEOUT_MS = 10_000;
/** A control call to the local sandbox bank answers in milliseconds; 2 s means it is not there. */
const CONTROL_TIMEOUT_MS = 2000;

/**
 * The storm's bound on its whole run, build included, past the traffic itself: 10 min (a short storm takes 1-2 min on
 * 2 cores, the full one about 2.5), 20 min with --cluster (Patroni's start and three failovers). Past it the storm
 * stops and exits 2 (scripts/storm/watchdog.ts).
 */
const RUN_BOUND_BEYOND_TRAFFIC_MS = 10 * 60_000;
const CLUSTER_RUN_BOUND_BEYOND_TRAFFIC_MS = 20 * 60_000;

/** The sandbox account the storm's payouts go to (10 digits, Luhn: docs/bank-sandbox.md "Payouts"). */
const STORM_PAYOUT_DESTINATION = "4000000002";

/** Users are created this many at a time: each is one INSERT and one token INSERT, ~1 ms each. */
const USER_BATCH = 25;

/** The progress bar redraws every 500 ms on a terminal, and prints a line every 5 s to a file or CI log. */
const PROGRESS_REDRAW_MS = 500;
const PROGRESS_NO_TTY_MS = 5000;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** A moment of the storm worth reporting (crashes), relative to the start of traffic. */
interface StormEvent {
  readonly atS: number;
  readonly what: string;
}

async function createUsers(db: pg.Pool, count: number, runTag: string): Promise<StormUser[]> {
  const { createApiTokenOrThrow } = await import("../lib/api-tokens/create-api-token");
  const users: StormUser[] = [];
  for (let start = 0; start < count; start += USER_BATCH) {
    const batch = Array.from({ length: Math.min(USER_BATCH, count - start) }, (_, offset) => start + offset);
    users.push(
      ...(await Promise.all(
        batch.map(async (index) => {
          const id = `storm_${runTag}_${index}`;
          await db.query(`INSERT INTO "user" ("id", "name", "email", "role") VALUES ($1, $2, $3, 'user')`, [
            id,
            `Storm user ${index}`,
            `${id}@storm.test`,
          ]);
          const { token } = await createApiTokenOrThrow({ userId: id, name: "storm" });
          return { index, id, token, email: `${id}@storm.test` };
        }),
      )),
    );
  }
  return users;
}

/**
 * The storm's admin account: created like the users, then made admin the way the e2e setup does (e2e/helpers.ts,
 * makeAdmin: `role = 'admin'` by SQL), with its own API token. Its index is -1: it is no simulated user.
 */
async function createAdmin(db: pg.Pool, runTag: string): Promise<StormUser> {
  const { createApiTokenOrThrow } = await import("../lib/api-tokens/create-api-token");
  const id = `storm_${runTag}_admin`;
  const email = `${id}@storm.test`;
  await db.query(`INSERT INTO "user" ("id", "name", "email", "role") VALUES ($1, $2, $3, 'user')`, [
    id,
    "Storm admin",
    email,
  ]);
  await db.query(`UPDATE "user" SET role = 'admin' WHERE email = $1`, [email]);
  const { token } = await createApiTokenOrThrow({ userId: id, name: "storm admin" });
  return { index: -1, id, token, email };
}

/** SIGKILLs and restarts the second app instance, then restarts Redis, at fixed fractions of the traffic phase. */
async function stageCrashes(
  services: StormServices,
  trafficStartMs: number,
  durationMs: number,
  events: StormEvent[],
): Promise<void> {
  const at = (ms: number) => ((ms - trafficStartMs) / 1000).toFixed(1);
  await sleep(trafficStartMs + durationMs * APP_CRASH_AT_FRACTION - Date.now());
  const killedMs = Date.now();
  await services.killApp(1);
  events.push({ atS: Number(at(killedMs)), what: `app2 SIGKILLed (whole process group) at ${at(killedMs)} s` });
  await sleep(APP_DOWN_MS);
  await services.restartApp(1);
  events.push({
    atS: Number(at(Date.now())),
    what: `app2 restarted, serving again at ${at(Date.now())} s (down ${((Date.now() - killedMs) / 1000).toFixed(1)} s)`,
  });

  await sleep(trafficStartMs + durationMs * REDIS_RESTART_AT_FRACTION - Date.now());
  const redisAtMs = Date.now();
  const { downMs } = await services.restartRedis();
  events.push({
    atS: Number(at(redisAtMs)),
    what: `redis SIGKILLed and restarted empty at ${at(redisAtMs)} s (down ${downMs} ms)`,
  });
}

/** Sums the reconciler process's JSON result lines (`[reconciler] {...}` in its log). */
function reconcilerRunSummary(log: string | null): string {
  if (!log) return "no reconciler process (scripts/reconcile.ts missing)";
  if (!existsSync(log)) return "reconciler log missing";
  const totals = { passes: 0, examined: 0, completed: 0, failed: 0, redriven: 0, anomalies: 0 };
  for (const line of readFileSync(log, "utf8").split("\n")) {
    const match = /^\[reconciler\] (\{.*\})$/.exec(line);
    if (!match) continue;
    try {
      const result = JSON.parse(match[1]!) as Record<string, unknown>;
      totals.passes += 1;
      totals.examined += Number(result.examined ?? 0);
      totals.completed += Number(result.completed ?? 0);
      totals.failed += Number(result.failed ?? 0);
      totals.redriven += Number(result.redriven ?? 0);
      totals.anomalies += Array.isArray(result.anomalies) ? result.anomalies.length : 0;
    } catch {
      // A partial last line of a stopped process: not a result.
    }
  }
  return `${totals.passes} passes during traffic: examined ${totals.examined}, completed ${totals.completed}, failed ${totals.failed}, redriven ${totals.redriven}, anomalies ${totals.anomalies}`;
}

async function webhookSummary(db: pg.Pool, userIds: readonly string[], services: StormServices): Promise<string> {
  const result = await db.query<{ outcome: string; events: string; deliveries: string }>(
    `SELECT outcome, count(*)::text AS events, sum(deliveries)::text AS deliveries
       FROM bank_webhook_events WHERE split_part(merchant_ref, ':', 2) = ANY ($1::text[])
      GROUP BY outcome ORDER BY outcome`,
    [userIds],
  );
  const events = result.rows.reduce((sum, row) => sum + Number(row.events), 0);
  const deliveries = result.rows.reduce((sum, row) => sum + Number(row.deliveries), 0);
  const outcomes = result.rows.map((row) => `${row.outcome} ${row.events}`).join(", ");
  const routing = services.webhookRouting();
  const routed = routing
    ? `; router: ${routing.perInstance.map((count, index) => `app${index + 1} ${count}`).join(", ")}, unreachable ${routing.unreachable} (bank retried)`
    : "";
  return `${events} events in ${deliveries} accepted deliveries (${deliveries - events} duplicates); outcomes: ${outcomes || "none"}${routed}`;
}

/**
 * Case C14 in the storm: the `charge.failed` events of charges that succeeded at the bank (the sandbox's reorder
 * switch sends one first and holds the success back until it is delivered), by what the app did with them:
 * `credited` (the row was unfinished; the app asked the bank, which said succeeded), `ignored_stale` (the row was
 * already settled, or the bank still had the charge pending), anything else. Invariant 6's check says whether any of
 * them cost a credit.
 */
async function staleFailureSummary(
  db: pg.Pool,
  userIds: readonly string[],
  charges: readonly { merchantRef: string; status: string }[],
): Promise<string> {
  const succeeded = charges.filter((charge) => charge.status === "succeeded").map((charge) => charge.merchantRef);
  const result = await db.query<{ outcome: string; events: string }>(
    `SELECT outcome, count(*)::text AS events FROM bank_webhook_events
      WHERE type = 'charge.failed' AND split_part(merchant_ref, ':', 2) = ANY ($1::text[])
        AND merchant_ref = ANY ($2::text[])
      GROUP BY outcome ORDER BY outcome`,
    [userIds, succeeded],
  );
  const events = result.rows.reduce((sum, row) => sum + Number(row.events), 0);
  const outcomes = result.rows.map((row) => `${row.outcome} ${row.events}`).join(", ");
  return `${events} charge.failed events for charges that succeeded${events > 0 ? ` (${outcomes})` : ""}`;
}

/** Two rounds of final reconciler passes as one: counts summed, the second round's state of what is left. */
function addFinalReconcile(first: FinalReconcile, second: FinalReconcile): FinalReconcile {
  return {
    passes: first.passes + second.passes,
    examined: first.examined + second.examined,
    completed: first.completed + second.completed,
    failed: first.failed + second.failed,
    redriven: first.redriven + second.redriven,
    anomalies: [...first.anomalies, ...second.anomalies],
    bankUnreachable: second.bankUnreachable,
    unfinishedLeft: second.unfinishedLeft,
  };
}

function finalReconcileSummary(final: FinalReconcile): string {
  return `${final.passes} final passes: examined ${final.examined}, completed ${final.completed}, failed ${final.failed}, redriven ${final.redriven}; unfinished rows left ${final.unfinishedLeft}${final.bankUnreachable ? `; bank unreachable: ${final.bankUnreachable}` : ""}`;
}

/**
 * Client retry budget in the cluster storm: 12 attempts, back-off up to 4 s (~30 s in all), so a user rides out
 * the ~11-20 s write outage of a lost PostgreSQL primary by retrying with the same key, as the issue asks.
 */
const CLUSTER_CLIENT_RETRY = { attemptsMax: 12, backoffMsMax: 4000 } as const;
/** The cluster storm's instances: three behind HAProxy; one in the short version that `npm test` runs. */
const CLUSTER_APP_INSTANCES = 3;
const CLUSTER_SHORT_APP_INSTANCES = 1;

async function run(options: StormOptions, watchdog: StormWatchdog): Promise<number> {
  const startedMs = Date.now();
  const instances = options.cluster
    ? options.short
      ? CLUSTER_SHORT_APP_INSTANCES
      : CLUSTER_APP_INSTANCES
    : APP_INSTANCES;
  say(
    `storm: seed ${options.seed}, ${options.users} users, ${options.durationS} s of traffic, ${instances} app instances${options.cluster ? " behind HAProxy (cluster)" : ""}`,
  );

  let services: StormServices;
  let clusterStorm: ClusterStorm | null = null;
  if (options.cluster) {
    const missing = missingClusterPackages({ pooler: options.pooler });
    if (missing.length > 0) {
      throw new Error(
        `--cluster needs apt packages that are missing: ${missing.join(" ")} (apt-get install -y ${missing.join(" ")})`,
      );
    }
    watchdog.step("building the app");
    ensureBuilt();
    watchdog.step("starting the cluster");
    say(
      "starting etcd, Patroni x3 (PostgreSQL 15), HAProxy, a 6-node Redis Cluster, the bank, the app and the reconciler",
    );
    clusterStorm = await startClusterStorm({
      seed: options.seed,
      appInstances: instances,
      pooler: options.pooler,
      // Patroni's leader TTL: 20 s in the short version (a loaded 2-core CI machine must not fail over
      // spuriously), 10 s in the full storm (a lost primary is replaced sooner).
      patroniTtlS: options.short ? 20 : 10,
    });
    services = clusterStorm.services;
    say(`cluster ready after ${((Date.now() - startedMs) / 1000).toFixed(1)} s`);
  } else if (options.target.kind === "own") {
    watchdog.step("building the app");
    ensureBuilt();
    watchdog.step("starting the services");
    say("starting PostgreSQL, Redis, the sandbox bank (faults on), two app instances and the reconciler");
    services = await startOwnServices({ seed: options.seed, appInstances: APP_INSTANCES });
  } else {
    services = givenServices(options.target);
    // Given instances are already running: 10 s is ample for a health answer; 2 s for a local control call.
    for (const url of services.appUrls) await waitForHttp(`${url}/api/v1/health`, GIVEN_READY_TIMEOUT_MS);
    const faults = await postControl(`${services.bankUrl}/_sandbox/faults`, STORM_FAULT_RATES, CONTROL_TIMEOUT_MS);
    if (!faults) throw new Error(`${services.bankUrl} is not a sandbox bank (POST /_sandbox/faults failed)`);
    say("targeting given services: no crash or Redis restart is staged (the storm did not start them)");
  }
  const unregister = registerCleanup(() => services.stop());
  watchdog.watchLogs(services.logDir);
  watchdog.step("creating the users");

  // The in-process reconciler passes, the audit and token creation use lib/, which reads these through lib/env.ts.
  process.env.DATABASE_URL = services.databaseUrl;
  if (services.redisUrl) process.env.REDIS_URL = services.redisUrl;
  else delete process.env.REDIS_URL;
  if (clusterStorm) process.env.REDIS_CLUSTER_NODES = clusterStorm.cluster.redisSeeds;
  process.env.BANK_URL = services.bankUrl;
  process.env.BANK_TIMEOUT_MS = STORM_SETTINGS.BANK_TIMEOUT_MS;
  process.env.LEASE_MS = STORM_SETTINGS.LEASE_MS;
  process.env.LOG_LEVEL = STORM_SETTINGS.LOG_LEVEL;
  if (services.webhookSecrets) process.env.BANK_WEBHOOK_SECRETS = services.webhookSecrets;
  // The audit holds credited rewards to the cap the instances run with; given instances run with theirs (default).
  if (services.canCrash) process.env.REWARD_DAILY_CAP_MINOR = STORM_SETTINGS.REWARD_DAILY_CAP_MINOR;
  // The audit judges charges and disputes older than STUCK_AFTER_S (default 300 s, longer than a storm): 5 s here, so
  // the lost and reversed disputes of the traffic are held to their chargebacks (lost_disputes_charged_back) once the
  // final reconciler passes, which read the bank's disputes, are done. Only a step the bank takes during the audit
  // itself (its dispute steps are 100 ms apart) is excused.
  process.env.STUCK_AFTER_S = STORM_AUDIT_STUCK_AFTER_S;
  // The final passes re-drive top-ups under the same ceiling as the instances (case C15).
  if (services.canCrash) process.env.MAX_BALANCE_MINOR = STORM_SETTINGS.MAX_BALANCE_MINOR;

  // Four connections: the storm's own reads are a handful of queries at setup and at the end. A connection that
  // does not open in 30 s is an error, not a wait; 30 s outlasts a Patroni failover in the cluster storm.
  const db = new pg.Pool({
    connectionString: services.databaseUrl,
    max: 4,
    application_name: "storm",
    connectionTimeoutMillis: 30_000,
  });
  db.on("error", () => {});
  const agents: Agent[] = services.appUrls.map(() => createAgent());
  try {
    // A tag per run keeps the users of two storms against the same database apart.
    const runTag = randomBytes(4).toString("hex");
    const users = await createUsers(db, options.users, runTag);
    const admin = await createAdmin(db, runTag);
    const userIds = users.map((user) => user.id);
    say(
      `created ${users.length} users and an admin with API tokens (setup took ${((Date.now() - startedMs) / 1000).toFixed(1)} s)`,
    );

    const operations: OperationRecord[] = [];
    const counters: TrafficCounters = { operations: 0, requests: 0, responses: 0, failures: 0 };
    const events: StormEvent[] = [];
    const durationMs = options.durationS * 1000;
    const trafficStartMs = Date.now();
    const deadlineMs = trafficStartMs + durationMs;
    const cpuBefore = clusterStorm ? sampleCpu(clusterStorm.cluster.appGroups()) : null;
    let cpuPerRequest: CpuByRole | null = null;

    const bar = new cliProgress.SingleBar(
      {
        format: "storm {bar} {value}/{total} s | ops {ops} | requests {requests} | lost {lost} | {phase}",
        noTTYOutput: true,
        notTTYSchedule: PROGRESS_NO_TTY_MS,
        fps: 1000 / PROGRESS_REDRAW_MS,
        stream: process.stderr,
        gracefulExit: false,
        hideCursor: null,
      },
      cliProgress.Presets.shades_classic,
    );
    let phase = "traffic";
    watchdog.step(phase);
    const payload = () => {
      watchdog.step(phase);
      return { ops: counters.operations, requests: counters.requests, lost: counters.failures, phase };
    };
    bar.start(options.durationS, 0, payload());
    const ticker = setInterval(() => {
      bar.update(Math.min(options.durationS, Math.floor((Date.now() - trafficStartMs) / 1000)), payload());
    }, PROGRESS_REDRAW_MS);

    let faults: FaultReport[] = [];
    let drain: DrainResult;
    let final: FinalReconcile;
    let checks: CheckResult[];
    let auditNotes: string[];
    let rowsForTotals;
    let chargesForSummary: Awaited<ReturnType<typeof readBankCharges>> = [];
    let disputesForSummary: Awaited<ReturnType<typeof readBankDisputes>> = [];
    let payoutsForSummary: BankPayoutSeen[] = [];
    let payoutsSettled: PayoutSettleResult[] = [];
    let money: MoneyLine | null = null;
    try {
      const crashes = clusterStorm
        ? clusterStorm.injectFaults(trafficStartMs, durationMs).then((reports) => {
            faults = reports;
          })
        : services.canCrash
          ? stageCrashes(services, trafficStartMs, durationMs, events)
          : Promise.resolve();
      await Promise.all([
        runTraffic({
          users,
          appUrls: services.appUrls,
          agents,
          seed: options.seed,
          deadlineMs,
          hardStopMs: deadlineMs + (clusterStorm ? CLUSTER_RETRY_GRACE_MS : RETRY_GRACE_MS),
          operations,
          counters,
          // Only the storm's own instances run with its ceiling; given ones keep theirs, unknown here.
          maxBalanceMinor: services.canCrash ? Number(STORM_SETTINGS.MAX_BALANCE_MINOR) : null,
          admin,
          bankUrl: services.bankUrl,
          moneyOut: { destination: STORM_PAYOUT_DESTINATION, unknownDomain: `unknown-${runTag}.storm.test` },
          ...(clusterStorm ? { retry: CLUSTER_CLIENT_RETRY } : {}),
        }),
        crashes,
      ]);

      if (clusterStorm && cpuBefore) {
        // Sampled before a restarted instance's group could be missed: the groups are read again now.
        cpuPerRequest = cpuMsPerRequest(cpuBefore, sampleCpu(clusterStorm.cluster.appGroups()), counters.requests);
      }
      phase = "settling payouts";
      bar.update(options.durationS, payload());
      payoutsSettled = [await waitForBankPayouts(services.bankUrl, userIds)];

      phase = "draining webhooks";
      bar.update(options.durationS, payload());
      await services.stopReconciler();
      drain = await drainWebhooks(services.bankUrl);

      phase = "reconciling";
      bar.update(options.durationS, payload());
      final = await reconcileUntilQuiet(db, userIds, services.bankUrl);
      // The final passes may have made payouts the bank had never received (a row orphaned before its POST): the
      // bank settles and returns those too, then the webhooks and one more round of passes finish them.
      phase = "settling payouts";
      bar.update(options.durationS, payload());
      payoutsSettled.push(await waitForBankPayouts(services.bankUrl, userIds));
      const secondDrain = await drainWebhooks(services.bankUrl);
      drain = { pendingLeft: secondDrain.pendingLeft, waitedMs: drain.waitedMs + secondDrain.waitedMs };
      phase = "reconciling";
      bar.update(options.durationS, payload());
      final = addFinalReconcile(final, await reconcileUntilQuiet(db, userIds, services.bankUrl));

      if (options.negativeControl) {
        phase = "corrupting (negative control)";
        bar.update(options.durationS, payload());
        await corruptOnPurpose(db, userIds);
      }

      phase = "auditing";
      bar.update(options.durationS, payload());
      const audit = await runContractAudit({ bankUrl: services.bankUrl, userIds: services.canCrash ? null : userIds });
      auditNotes = audit.notes;
      const [rows, charges, disputes, payouts] = await Promise.all([
        readLedgerRows(db, userIds),
        readBankCharges(services.bankUrl),
        readBankDisputes(services.bankUrl),
        readBankPayouts(services.bankUrl),
      ]);
      rowsForTotals = rows;
      chargesForSummary = charges;
      disputesForSummary = disputes;
      payoutsForSummary = payouts;
      money = await moneyLine(db, userIds, rows, payouts);
      checks = [
        ...audit.checks,
        {
          name: "reconciler: no anomaly, nothing left unfinished",
          ok: final.anomalies.length === 0 && final.unfinishedLeft === 0 && final.bankUnreachable === null,
          scope: `${final.passes} final passes`,
          violations: [
            ...final.anomalies.slice(0, 20),
            ...(final.unfinishedLeft > 0 ? [`${final.unfinishedLeft} rows still initiated/processing`] : []),
            ...(final.bankUnreachable ? [`bank unreachable: ${final.bankUnreachable}`] : []),
          ],
        },
        ...runClientChecks(operations, rows, charges, disputes, payouts),
        money.check,
      ];
      phase = "done";
      bar.update(options.durationS, payload());
    } finally {
      clearInterval(ticker);
      bar.stop();
    }

    if (clusterStorm) {
      checks.push({
        name: "cluster: every fault recovered",
        ok: faults.length === 3 && faults.every((fault) => fault.outageMs !== null),
        scope: `${faults.length} faults`,
        violations: faults.filter((fault) => fault.outageMs === null).map((fault) => `${fault.what}: not recovered`),
      });
    }
    const violated = checks.filter((check) => !check.ok);
    const out: string[] = [];
    out.push("");
    out.push(
      `storm summary: seed ${options.seed}, ${options.users} users, ${options.durationS} s of traffic on ${instances} app instances${clusterStorm ? " behind HAProxy" : ""}, ` +
        `${((Date.now() - startedMs) / 1000).toFixed(0)} s in all`,
    );
    out.push("");
    out.push(renderTotals(totalsByKind(operations, rowsForTotals)));
    out.push(
      "  attempted = HTTP requests sent; distinct = ledger keys they addressed; lost = client timeouts and dropped",
    );
    out.push(
      "  connections; succeeded/failed/moved = ledger rows at the end (credits for top-ups, rewards and chargeback reversals,",
    );
    out.push(
      "  debits for payments, refunds and chargebacks; chargebacks come from the bank's disputes, not from a request).",
    );
    out.push("");
    out.push(`duplication: ${patternSummary(operations)}`);
    if (clusterStorm) {
      out.push("failovers (outage = last successful probe before the fault to the first after it):");
      for (const fault of faults) {
        out.push(
          `  at ${fault.atS.toFixed(1)} s  ${fault.what}: outage ${fault.outageMs === null ? "NOT RECOVERED" : `${(fault.outageMs / 1000).toFixed(1)} s`}; ${fault.detail}`,
        );
      }
      out.push(`money:       ${await moneySummary(db, userIds)}`);
      if (cpuPerRequest) {
        out.push(
          `cpu:         per request during traffic (ms, /proc, lower bound: killed processes take theirs along): ${CPU_ROLES.map((role) => `${role} ${cpuPerRequest![role].toFixed(2)}`).join(", ")}`,
        );
      }
    } else {
      out.push(
        `crashes:     ${events.length > 0 ? events.map((event) => event.what).join("; ") : "none staged (given services)"}`,
      );
    }
    out.push(`webhooks:    ${await webhookSummary(db, userIds, services)}`);
    out.push(`stale (C14): ${await staleFailureSummary(db, userIds, chargesForSummary)}`);
    out.push(`refunds:     ${refundSummary(operations, rowsForTotals)}`);
    out.push(`disputes:    ${disputeSummary(disputesForSummary, userIds)}`);
    out.push(`payouts:     ${payoutSummary(operations, rowsForTotals, payoutsForSummary, userIds, payoutsSettled)}`);
    out.push(`transfers:   ${transferSummary(operations, rowsForTotals)}`);
    if (money) out.push(`money line:  ${money.figures}`);
    out.push(
      `drain:       ${drain.pendingLeft === 0 ? "no delivery pending" : `${drain.pendingLeft ?? "unknown"} deliveries still pending`} after ${(drain.waitedMs / 1000).toFixed(1)} s`,
    );
    out.push(`reconciler:  ${reconcilerRunSummary(services.reconcilerLog)}`);
    out.push(`             ${finalReconcileSummary(final)}`);
    for (const note of auditNotes) out.push(`note:        ${note}`);
    if (services.logDir) out.push(`logs:        ${services.logDir}`);
    out.push("");
    out.push("invariants");
    out.push(renderChecks(checks));
    out.push("");
    out.push(
      violated.length === 0
        ? `result: all ${checks.length} invariant checks hold`
        : `result: ${violated.length} of ${checks.length} invariant checks violated`,
    );
    process.stdout.write(`${out.join("\n")}\n`);
    return violated.length === 0 ? EXIT_OK : EXIT_VIOLATION;
  } finally {
    watchdog.step("stopping the services");
    for (const agent of agents) agent.destroy();
    await db.end().catch(() => {});
    await closeLibClients();
    await services.stop();
    unregister();
  }
}

/**
 * The negative control (--negative-control, own services only): credits one storm wallet by 1 without a ledger row
 * (breaks invariant 7.1), appends a space to one stored response (breaks 7.4 and the client's "answers are the
 * rows' stored responses"), and takes back the credit of one succeeded top-up, marking it failed for the ceiling
 * (breaks invariant 6, a charge that succeeded and nothing credits it, as a trusted stale `charge.failed` would in
 * case C14; and the C15 check, a top-up refused at the ceiling with a charge at the bank). Its wallet, one that still
 * holds that much, is debited too, so 7.1 alone would not notice. It also raises one succeeded refund to 1.00 more
 * than its top-up (breaks refunds_within_topups, the client's "amounts as sent", "never more back to the card than
 * charged" and, when an admin saw it acknowledged, "acknowledged refunds within their top-ups"); a storm without a
 * succeeded refund skips that part. And it tampers with the books (contract section 13): one payment's merchant
 * posting is raised by 1 behind the append-only trigger (breaks books_balanced); the wallet bumped above is off its
 * account (wallet_accounts_match), the top-up marked failed keeps its transaction (journal_matches_entries) and the
 * raised refund is off the bank's movements (bank_clearing_matches_bank). Money out too (contract sections 14 and 15):
 * one payout the bank paid (and did not return) is marked failed and its hold credited back to its wallet, as a
 * trusted stale failure would (breaks payouts_match_bank, "the bank paid it, the ledger gave the hold back", the
 * storm's money line and the books' wallet account); and one transfer_in is marked failed with its credit taken back
 * from the recipient's wallet, the effect of a lost credit (breaks transfers_balanced, the money line's "transfers
 * sent = received" and the books' wallet account). A storm run with it must report violations and exit 1.
 */
async function corruptOnPurpose(db: pg.Pool, userIds: readonly string[]): Promise<void> {
  await db.query("UPDATE wallets SET balance_minor = balance_minor + 1 WHERE user_id = $1", [userIds[0]]);
  await db.query(
    `WITH victim AS (
       UPDATE ledger_entries SET status = 'failed', failure_reason = 'balance_limit_exceeded'
        WHERE (user_id, id) = (SELECT e.user_id, e.id FROM ledger_entries e JOIN wallets w ON w.user_id = e.user_id
                                WHERE e.user_id = ANY ($1::text[]) AND e.user_id <> $2 AND e.type = 'topup'
                                  AND e.status = 'succeeded' AND w.balance_minor >= e.amount_minor
                                ORDER BY e.id LIMIT 1)
        RETURNING user_id, amount_minor)
     UPDATE wallets w SET balance_minor = w.balance_minor - victim.amount_minor
       FROM victim WHERE w.user_id = victim.user_id`,
    [userIds, userIds[0]],
  );
  await db.query(
    `UPDATE ledger_entries e SET amount_minor = t.amount_minor + 100
       FROM ledger_entries t
      WHERE t.user_id = e.user_id AND t.id = e.refunds_entry_id
        AND (e.user_id, e.id) = (SELECT user_id, id FROM ledger_entries
                                  WHERE user_id = ANY ($1::text[]) AND type = 'refund' AND status = 'succeeded'
                                  ORDER BY id LIMIT 1)`,
    [userIds],
  );
  const books = await db.connect();
  try {
    await books.query("BEGIN");
    await books.query("SET LOCAL session_replication_role = replica");
    await books.query(
      `UPDATE ledger_postings SET amount_minor = amount_minor + 1
        WHERE (user_id, entry_id, event, account) = (
          SELECT user_id, entry_id, event, account FROM ledger_postings
           WHERE user_id = ANY ($1::text[]) AND account = 'merchants_payable' ORDER BY id LIMIT 1)`,
      [userIds],
    );
    await books.query("COMMIT");
  } finally {
    books.release();
  }
  await db.query(
    `UPDATE ledger_entries SET response_body = response_body || ' '
      WHERE (user_id, id) = (SELECT user_id, id FROM ledger_entries
                              WHERE user_id = ANY ($1::text[]) AND response_status = 201 ORDER BY id LIMIT 1)`,
    [userIds],
  );
  // A payout posted as paid, not of a returning switch (the bank says `paid`): failed, its hold given back.
  await db.query(
    `WITH victim AS (
       UPDATE ledger_entries SET status = 'failed', failure_reason = 'insufficient_funds_at_bank'
        WHERE (user_id, id) = (SELECT user_id, id FROM ledger_entries
                                WHERE user_id = ANY ($1::text[]) AND type = 'payout' AND status = 'succeeded'
                                  AND ref_id NOT LIKE 'sbx-po-return-%' AND ref_id NOT LIKE 'sbx-po-reorder-%'
                                ORDER BY id LIMIT 1)
        RETURNING user_id, amount_minor)
     UPDATE wallets w SET balance_minor = w.balance_minor + victim.amount_minor
       FROM victim WHERE w.user_id = victim.user_id`,
    [userIds],
  );
  // A transfer received, its credit lost: failed, taken back from a recipient that still holds it.
  await db.query(
    `WITH victim AS (
       UPDATE ledger_entries SET status = 'failed', failure_reason = 'insufficient_funds'
        WHERE (user_id, id) = (SELECT e.user_id, e.id FROM ledger_entries e JOIN wallets w ON w.user_id = e.user_id
                                WHERE e.user_id = ANY ($1::text[]) AND e.type = 'transfer_in'
                                  AND e.status = 'succeeded' AND w.balance_minor >= e.amount_minor
                                ORDER BY e.id LIMIT 1)
        RETURNING user_id, amount_minor)
     UPDATE wallets w SET balance_minor = w.balance_minor - victim.amount_minor
       FROM victim WHERE w.user_id = victim.user_id`,
    [userIds],
  );
}

/**
 * The cluster storm's money line: lost acknowledged operations (from the client check), double credits (a bank
 * charge credited by more than one row, or a wallet whose balance differs from its ledger), and the highest reward
 * total of any user-day against the cap.
 */
async function moneySummary(db: pg.Pool, userIds: readonly string[]): Promise<string> {
  const doubleCharges = await db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM (
       SELECT bank_charge_id FROM ledger_entries
        WHERE user_id = ANY ($1::text[]) AND status = 'succeeded' AND bank_charge_id IS NOT NULL
        GROUP BY bank_charge_id HAVING count(*) > 1) t`,
    [userIds],
  );
  const walletDrift = await db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM wallets w
       LEFT JOIN (SELECT user_id,
                         sum(CASE WHEN type IN ('payment', 'refund', 'chargeback', 'payout', 'transfer') THEN -amount_minor ELSE amount_minor END) AS net
                    FROM ledger_entries
                   WHERE (status = 'succeeded' OR (type IN ('refund', 'payout') AND status IN ('initiated', 'processing')))
                     AND user_id = ANY ($1::text[]) GROUP BY user_id) l
         ON l.user_id = w.user_id
      WHERE w.user_id = ANY ($1::text[]) AND w.balance_minor - w.debt_minor <> coalesce(l.net, 0)`,
    [userIds],
  );
  const rewardMax = await db.query<{ max: string | null }>(
    `SELECT max(total)::text AS max FROM (
       SELECT sum(amount_minor) AS total FROM ledger_entries
        WHERE user_id = ANY ($1::text[]) AND type = 'reward' AND status = 'succeeded'
        GROUP BY user_id, params->>'day') t`,
    [userIds],
  );
  const doubleCredits = Number(doubleCharges.rows[0]?.n ?? 0) + Number(walletDrift.rows[0]?.n ?? 0);
  return `double credits ${doubleCredits} (charges credited twice ${doubleCharges.rows[0]?.n}, wallets off their ledger ${walletDrift.rows[0]?.n}); highest reward day ${rewardMax.rows[0]?.max ?? 0} of cap ${STORM_SETTINGS.REWARD_DAILY_CAP_MINOR}`;
}

/** The storm's money line (see {@link moneyLine}): its figures and its check. */
interface MoneyLine {
  readonly figures: string;
  readonly check: CheckResult;
}

/** Ledger types whose succeeded rows bring money into the storm's wallets from outside (+) or send it out (-). */
const MONEY_IN_SIGN: Readonly<Partial<Record<LedgerRow["type"], 1 | -1>>> = {
  topup: 1,
  adjustment: 1,
  reward: 1,
  chargeback_reversal: 1,
  payment: -1,
  refund: -1,
  chargeback: -1,
};

/**
 * The storm's conservation of money, from the wallets, the ledger and the bank's own payouts: the sum of the storm's
 * wallets (balance less debt), plus what is held for payouts still unfinished, plus what the bank paid out (paid or
 * later returned), less what the bank returned, equals the money in: top-ups, adjustments, rewards and chargeback
 * reversals, net of payments, refunds (in flight ones included: their claim reserved the money) and chargebacks.
 * Transfers move money between the storm's own wallets only: what was sent equals what was received.
 */
async function moneyLine(
  db: pg.Pool,
  userIds: readonly string[],
  rows: readonly LedgerRow[],
  payouts: readonly BankPayoutSeen[],
): Promise<MoneyLine> {
  const wallets = await db.query<{ sum: string | null }>(
    `SELECT sum(balance_minor - debt_minor)::text AS sum FROM wallets WHERE user_id = ANY ($1::text[])`,
    [userIds],
  );
  const walletsMinor = Number(wallets.rows[0]?.sum ?? 0);
  let moneyInMinor = 0;
  let heldMinor = 0;
  let sentMinor = 0;
  let receivedMinor = 0;
  for (const row of rows) {
    const unfinished = row.status === "initiated" || row.status === "processing";
    if (row.type === "payout" && unfinished) heldMinor += row.amountMinor;
    if (row.type === "refund" && unfinished) moneyInMinor -= row.amountMinor;
    if (row.status !== "succeeded") continue;
    moneyInMinor += (MONEY_IN_SIGN[row.type] ?? 0) * row.amountMinor;
    if (row.type === "transfer") sentMinor += row.amountMinor;
    if (row.type === "transfer_in") receivedMinor += row.amountMinor;
  }
  const storm = new Set(userIds);
  let paidOutMinor = 0;
  let returnedMinor = 0;
  for (const payout of payouts) {
    if (!storm.has(payout.merchantRef.split(":")[1] ?? "") || !payout.merchantRef.startsWith("payout:")) continue;
    if (payout.status === "paid" || payout.status === "returned") paidOutMinor += payout.amount;
    if (payout.status === "returned") returnedMinor += payout.amount;
  }
  const accounted = walletsMinor + heldMinor + paidOutMinor - returnedMinor + sentMinor - receivedMinor;
  const violations: string[] = [];
  if (accounted !== moneyInMinor)
    violations.push(
      `wallets ${walletsMinor} + held ${heldMinor} + paid out ${paidOutMinor} - returned ${returnedMinor} + transfers sent ${sentMinor} - received ${receivedMinor} = ${accounted}, money in ${moneyInMinor} (off by ${accounted - moneyInMinor})`,
    );
  if (sentMinor !== receivedMinor)
    violations.push(`transfers sent ${sentMinor}, received ${receivedMinor} (off by ${receivedMinor - sentMinor})`);
  return {
    figures:
      `wallets ${walletsMinor} + held in payouts ${heldMinor} + paid out ${paidOutMinor} - returned ${returnedMinor} ` +
      `= ${walletsMinor + heldMinor + paidOutMinor - returnedMinor}; money in ${moneyInMinor}; transfers sent ${sentMinor}, received ${receivedMinor} (minor units)`,
    check: {
      name: "money: wallets + held in payouts + paid out - returned = money in; transfers sent = received",
      ok: violations.length === 0,
      scope: `${userIds.length} wallets, ${payouts.length} bank payouts`,
      violations,
    },
  };
}

/** Counts by label, `label N, label N`, sorted. */
function countsLine(labels: Iterable<string>): string {
  const counts = new Map<string, number>();
  for (const label of labels) counts.set(label, (counts.get(label) ?? 0) + 1);
  return [...counts.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([label, count]) => `${label} ${count}`)
    .join(", ");
}

/**
 * The payouts: how many the users sent by switch, how their rows ended (paid = succeeded; failed with its reason;
 * returned = a `payout_return` credited; held now = still unfinished, with the amount held), what the bank says, and
 * how long the storm waited for the bank to settle and return them.
 */
function payoutSummary(
  operations: readonly OperationRecord[],
  rows: readonly LedgerRow[],
  payouts: readonly BankPayoutSeen[],
  userIds: readonly string[],
  settled: readonly PayoutSettleResult[],
): string {
  const sent = operations.filter((operation) => operation.kind === "payout");
  const switches = countsLine(sent.map((operation) => /^(sbx-po-[a-z0-9]+-)/.exec(operation.ident)?.[1] ?? "none"));
  let paid = 0;
  let returned = 0;
  let heldCount = 0;
  let heldMinor = 0;
  const failed: string[] = [];
  for (const row of rows) {
    if (row.type === "payout_return" && row.status === "succeeded") returned += 1;
    if (row.type !== "payout") continue;
    if (row.status === "succeeded") paid += 1;
    else if (row.status === "failed") failed.push(row.failureReason ?? "unknown");
    else {
      heldCount += 1;
      heldMinor += row.amountMinor;
    }
  }
  const storm = new Set(userIds);
  const bank = countsLine(
    payouts
      .filter((payout) => payout.merchantRef.startsWith("payout:") && storm.has(payout.merchantRef.split(":")[1] ?? ""))
      .map((payout) => payout.status),
  );
  const waits = settled
    .map(
      (wait) =>
        `${(wait.waitedMs / 1000).toFixed(1)} s (${wait.pendingLeft} pending, ${wait.returnsLeft} returns left)`,
    )
    .join(" + ");
  return (
    `${sent.length} sent (switches: ${switches || "none"}; duplication: ${patternSummary(sent) || "none"}); ` +
    `rows: paid ${paid}, failed ${failed.length}${failed.length > 0 ? ` (${countsLine(failed)})` : ""}, returned ${returned}, held now ${heldCount} (${heldMinor}); ` +
    `bank: ${bank || "none"}; waited for the bank ${waits || "0 s"}`
  );
}

/**
 * The transfers: how many the users sent by plan (to another user, crossing pairs sent both ways at once, to unknown
 * addresses, to oneself), how their rows ended, and what the recipients' `transfer_in` rows hold.
 */
function transferSummary(operations: readonly OperationRecord[], rows: readonly LedgerRow[]): string {
  const sent = operations.filter((operation) => operation.kind === "transfer");
  const crossing = sent.filter((operation) => operation.ident.startsWith("tx-")).length;
  const unknown = sent.filter((operation) => operation.refusedTransfer === "recipient_unknown").length;
  const self = sent.filter((operation) => operation.refusedTransfer === "transfer_to_self").length;
  let succeeded = 0;
  let movedMinor = 0;
  let received = 0;
  let receivedMinor = 0;
  const failed: string[] = [];
  for (const row of rows) {
    if (row.type === "transfer_in" && row.status === "succeeded") {
      received += 1;
      receivedMinor += row.amountMinor;
    }
    if (row.type !== "transfer") continue;
    if (row.status === "succeeded") {
      succeeded += 1;
      movedMinor += row.amountMinor;
    } else if (row.status === "failed") failed.push(row.failureReason ?? "unknown");
  }
  return (
    `${sent.length} sent (to another user ${sent.length - 2 * crossing - unknown - self}, crossing pairs ${crossing}, ` +
    `to unknown addresses ${unknown}, to oneself ${self}; duplication: ${patternSummary(sent) || "none"}); ` +
    `rows: succeeded ${succeeded} (${movedMinor}), failed ${failed.length}${failed.length > 0 ? ` (${countsLine(failed)})` : ""}; ` +
    `received ${received} (${receivedMinor})`
  );
}

/**
 * The admins' refunds: how many of each kind (full = the whole top-up; over-refunds and refunds failing at the bank
 * counted apart; those sent at the same moment as a dispute of their top-up counted again), how they were
 * duplicated, and how the ledger ended with them.
 */
function refundSummary(
  operations: readonly OperationRecord[],
  rows: readonly { type: string; status: string; failureReason: string | null }[],
): string {
  const topupAmounts = new Map(
    operations
      .filter((operation) => operation.kind === "topup")
      .map((operation) => [`${operation.userId}|${operation.ident}`, operation.amountMinor]),
  );
  const refunds = operations.filter((operation) => operation.kind === "refund");
  const kinds = { partial: 0, full: 0, over: 0, bankFails: 0, raced: 0 };
  for (const refund of refunds) {
    if (refund.ident.startsWith(RACED_REFUND_PREFIX)) kinds.raced += 1;
    if (refund.overRefund) kinds.over += 1;
    else if (refund.ident.startsWith("sbx-refund-fail-")) kinds.bankFails += 1;
    else if (topupAmounts.get(`${refund.userId}|${refund.topupRefId}`) === refund.amountMinor) kinds.full += 1;
    else kinds.partial += 1;
  }
  const outcomes = new Map<string, number>();
  for (const row of rows) {
    if (row.type !== "refund") continue;
    const outcome = row.status === "failed" ? `failed ${row.failureReason}` : row.status;
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  }
  const ledger = [...outcomes.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([outcome, count]) => `${outcome} ${count}`)
    .join(", ");
  return (
    `${refunds.length} sent by the admins (partial ${kinds.partial}, full ${kinds.full}, over-refunds ${kinds.over}, ` +
    `failing at the bank ${kinds.bankFails}; raced with a dispute ${kinds.raced}; ` +
    `duplication: ${patternSummary(refunds)}); rows: ${ledger || "none"}`
  );
}

/** The bank's disputes on the storm's top-ups, by outcome (a reversal is `won` with `lostAt` set). */
function disputeSummary(
  disputes: readonly { merchantRef: string; status: string; lostAt: string | null }[],
  userIds: readonly string[],
): string {
  const storm = new Set(userIds);
  const counts = { open: 0, lost: 0, reversed: 0, won: 0 };
  for (const dispute of disputes) {
    if (!storm.has(dispute.merchantRef.split(":")[1] ?? "")) continue;
    if (dispute.status === "open") counts.open += 1;
    else if (dispute.status === "lost") counts.lost += 1;
    else if (dispute.lostAt !== null) counts.reversed += 1;
    else counts.won += 1;
  }
  const total = counts.open + counts.lost + counts.reversed + counts.won;
  return `${total} at the bank: lost ${counts.lost}, lost then reversed ${counts.reversed}, won ${counts.won}, open ${counts.open}`;
}

function patternSummary(operations: readonly OperationRecord[]): string {
  const counts = new Map<string, number>();
  for (const operation of operations) counts.set(operation.pattern, (counts.get(operation.pattern) ?? 0) + 1);
  return [...counts.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([pattern, count]) => `${pattern} ${count}`)
    .join(", ");
}

/** Closes lib/'s pool and Redis client if the in-process passes opened them. */
async function closeLibClients(): Promise<void> {
  const [{ closeDb }, { closeRedis }] = await Promise.all([import("../lib/db"), import("../lib/redis")]);
  await closeDb();
  await closeRedis();
}

async function main(): Promise<number> {
  exitWithHelpIfAsked(USAGE);
  let options: StormOptions;
  try {
    options = parseStormOptions(process.argv.slice(2), () => randomInt(0, 2 ** 32 - 1));
  } catch (error) {
    if (error instanceof StormUsageError) {
      say(`${error.message === "help requested" ? "" : `${error.message}\n`}${USAGE}`);
      return EXIT_CANNOT_RUN;
    }
    throw error;
  }
  const watchdog = armStormWatchdog({
    boundMs:
      options.durationS * 1000 + (options.cluster ? CLUSTER_RUN_BOUND_BEYOND_TRAFFIC_MS : RUN_BOUND_BEYOND_TRAFFIC_MS),
    exitCode: EXIT_CANNOT_RUN,
    write: say,
  });
  // The stack's log folder is known before the services are up; a second storm at once gets a suffixed one,
  // added when its services are.
  watchdog.watchLogs(join(projectRoot, "reports", "stack-logs", options.cluster ? "storm-cluster" : "storm"));
  try {
    return await run(options, watchdog);
  } catch (error) {
    say(`storm could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return EXIT_CANNOT_RUN;
  } finally {
    watchdog.disarm();
  }
}

void main().then((code) => {
  // Every service is stopped by now; exit explicitly so a lingering keep-alive socket cannot hold the process.
  process.exit(code);
});
