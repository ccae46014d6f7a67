/**
 * The cluster storm's services and its three faults, each with its outage measured by a probe:
 *  (a) the PostgreSQL primary node is lost (Patroni and its postmaster SIGKILLed): a probe writes through HAProxy
 *      every 100 ms, and the write outage is the gap between its last success before and first success after;
 *      the node is started again afterwards and rejoins as a replica;
 *  (b) a Redis replica is frozen (SIGSTOP), its master keeps acknowledging writes, then the master is SIGKILLed
 *      and the stale replica resumed and promoted: the lagging-replica case of docs/development.md note 28, which loses
 *      acknowledged writes. A probe counts acknowledged INCRs of a key in that master's slots during the freeze
 *      and reads what survived;
 *  (c) one app instance is SIGKILLed (its process group) and restarted 2 s later; a probe GETs the liveness route
 *      through HAProxy.
 */
import { join } from "node:path";
import Redis from "ioredis";
import pg from "pg";
import { createClusterClient, parseClusterNodes } from "../../lib/redis";
import { sleep } from "../lib/ports";
import { startHaCluster, type HaCluster } from "../lib/ha-cluster";
import { LOAD_OPS_PER_MINUTE, projectRoot } from "../lib/stack";
import type { StormServices } from "./services";
import { STORM_SETTINGS, stormBankEnvironment } from "./services";

/** One fault and what it cost. */
export interface FaultReport {
  readonly what: string;
  /** When it was injected, seconds after traffic started. */
  readonly atS: number;
  /** The measured outage, ms (null when the probe never recovered). */
  readonly outageMs: number | null;
  readonly detail: string;
}

/** Probe period: 100 ms, so an outage is measured to a tenth of a second. */
const PROBE_INTERVAL_MS = 100;
/** A probe that has not recovered 60 s after a fault gives up (the storm reports it as not recovered). */
const PROBE_GIVE_UP_MS = 60_000;
/** How long the Redis replica stays frozen while its master acknowledges writes: 1.5 s of traffic. */
const REPLICA_FREEZE_MS = 1500;
/** The killed app instance stays down 2 s, as in the single-machine storm. */
const APP_DOWN_MS = 2000;

/** The cluster as the storm uses it, plus the fault injector. */
export interface ClusterStorm {
  readonly services: StormServices;
  readonly cluster: HaCluster;
  /** Runs the three faults at the given fractions of the traffic phase. */
  injectFaults(trafficStartMs: number, durationMs: number): Promise<FaultReport[]>;
}

/**
 * Starts the cluster (scripts/lib/ha-cluster.ts) with the storm's settings and wraps it as {@link StormServices}.
 * `appInstances` instances sit behind HAProxy; the storm's clients all talk to HAProxy.
 */
export async function startClusterStorm(options: {
  seed: number;
  appInstances: number;
  pooler: boolean;
  patroniTtlS: number;
}): Promise<ClusterStorm> {
  const logDir = join(projectRoot, "reports", "stack-logs", "storm-cluster");
  const cluster = await startHaCluster({
    appInstances: options.appInstances,
    pooler: options.pooler,
    logDir,
    patroniTtlS: options.patroniTtlS,
    appEnv: {
      LEASE_MS: STORM_SETTINGS.LEASE_MS,
      BANK_TIMEOUT_MS: STORM_SETTINGS.BANK_TIMEOUT_MS,
      LOG_LEVEL: STORM_SETTINGS.LOG_LEVEL,
      REWARD_TZ: STORM_SETTINGS.REWARD_TZ,
      REWARD_DAILY_CAP_MINOR: STORM_SETTINGS.REWARD_DAILY_CAP_MINOR,
      MAX_BALANCE_MINOR: STORM_SETTINGS.MAX_BALANCE_MINOR,
      OPS_PER_MINUTE: LOAD_OPS_PER_MINUTE,
    },
    bankEnv: {
      ...stormBankEnvironment(options.seed),
      // 20 attempts (the storm's default is 8): deliveries must outlast a database failover (~20 s) and arrive.
      BANK_WEBHOOK_MAX_ATTEMPTS: "20",
    },
  });
  const services: StormServices = {
    // Every client talks to HAProxy; the two entries keep the traffic's "other instance" patterns meaningful
    // (two connections pools, both through the balancer).
    appUrls: [cluster.appUrl, cluster.appUrl],
    databaseUrl: cluster.adminDatabaseUrl,
    bankUrl: cluster.bankUrl,
    redisUrl: null,
    webhookSecrets: cluster.webhookSecret,
    canCrash: true,
    logDir,
    reconcilerLog: join(logDir, "reconciler.log"),
    webhookRouting: () => null,
    killApp: (index) => cluster.killApp(index),
    restartApp: (index) => cluster.restartApp(index),
    restartRedis: async () => {
      throw new Error("the cluster storm does not restart Redis: it fails a master over instead");
    },
    stopReconciler: () => cluster.stopReconciler(),
    stop: () => cluster.stop(),
  };
  return {
    services,
    cluster,
    async injectFaults(trafficStartMs, durationMs) {
      const reports: FaultReport[] = [];
      const at = (ms: number) => Number(((ms - trafficStartMs) / 1000).toFixed(1));
      await sleep(trafficStartMs + durationMs * 0.2 - Date.now());
      reports.push(await losePrimaryNode(cluster, at));
      await sleep(trafficStartMs + durationMs * 0.55 - Date.now());
      reports.push(await failOverToLaggingReplica(cluster, at));
      await sleep(trafficStartMs + durationMs * 0.75 - Date.now());
      reports.push(await killAppInstance(cluster, at));
      return reports;
    },
  };
}

/** A write probe through HAProxy: one upsert per call on its own short-lived connection. */
async function probeWrite(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000, statement_timeout: 2000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query(
      `CREATE TABLE IF NOT EXISTS _failover_probe (id int PRIMARY KEY, at timestamptz NOT NULL);
       INSERT INTO _failover_probe VALUES (1, now()) ON CONFLICT (id) DO UPDATE SET at = now()`,
    );
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Runs `probe` every 100 ms from now until it has succeeded after `faultAtMs`; returns the outage in ms. */
async function measureOutage(probe: () => Promise<boolean>, lastOkBeforeMs: number): Promise<number | null> {
  const deadline = Date.now() + PROBE_GIVE_UP_MS;
  while (Date.now() < deadline) {
    if (await probe()) return Date.now() - lastOkBeforeMs;
    await sleep(PROBE_INTERVAL_MS);
  }
  return null;
}

/** The postgres database through HAProxy's write frontend (the probe stays out of the wallet's schema). */
function probeUrl(cluster: HaCluster): string {
  const url = new URL(cluster.adminDatabaseUrl);
  url.pathname = "/postgres";
  return url.toString();
}

async function losePrimaryNode(cluster: HaCluster, at: (ms: number) => number): Promise<FaultReport> {
  const primary = await cluster.primary();
  const url = probeUrl(cluster);
  if (!primary) return { what: "PostgreSQL primary lost", atS: at(Date.now()), outageMs: null, detail: "no primary" };
  let lastOkMs = Date.now();
  if (await probeWrite(url)) lastOkMs = Date.now();
  const killedMs = Date.now();
  await cluster.killNode(primary);
  const outageMs = await measureOutage(() => probeWrite(url), lastOkMs);
  const next = await cluster.primary();
  await cluster.restartNode(primary);
  return {
    what: `PostgreSQL primary ${primary.name} lost (Patroni + postmaster SIGKILLed)`,
    atS: at(killedMs),
    outageMs,
    detail: `new primary ${next?.name ?? "unknown"}; ${primary.name} restarted and rejoined as a replica`,
  };
}

async function failOverToLaggingReplica(cluster: HaCluster, at: (ms: number) => number): Promise<FaultReport> {
  const probeKey = "storm:{failover-probe}";
  const client = createClusterClient(parseClusterNodes(cluster.redisSeeds));
  client.on("error", () => {});
  try {
    await client.connect();
    const slot = Number(await client.call("CLUSTER", "KEYSLOT", probeKey));
    const shards = (await client.call("CLUSTER", "SHARDS")) as unknown[];
    const owner = findShardOwner(shards, slot);
    const roles = await cluster.redis.roles();
    const master = roles.find((role) => role.role === "master" && role.port === owner);
    const replica = roles.find((role) => role.role === "replica" && role.masterPort === owner);
    if (!master || !replica) {
      return {
        what: "Redis lagging-replica failover",
        atS: at(Date.now()),
        outageMs: null,
        detail: "topology unknown",
      };
    }
    const replicaPid = cluster.redis.nodes.find((node) => node.port === replica.port)!.pid;
    await client.set(probeKey, "0");
    await sleep(200);
    process.kill(replicaPid, "SIGSTOP");
    // Loopback socket buffers hold a few MB of replication stream, which a resumed replica would still read:
    // 24 MB written to the same slot first fill them, so what follows stays in the master's buffer only and is
    // lost with it (the lag that cost 49 increments in docs/development.md note 28).
    const filler = "x".repeat(2 * 1024 * 1024);
    for (let i = 0; i < 12; i++) await client.set(`storm:{failover-probe}:filler:${i}`, filler).catch(() => {});
    // While the replica is frozen the master keeps acknowledging: count every INCR it acknowledged.
    let acknowledged = 0;
    const freezeEnd = Date.now() + REPLICA_FREEZE_MS;
    while (Date.now() < freezeEnd) {
      await client.incr(probeKey).then(
        () => (acknowledged += 1),
        () => {},
      );
      await sleep(10);
    }
    const killedMs = Date.now();
    await cluster.redis.kill(master.port);
    process.kill(replicaPid, "SIGCONT");
    const direct = new Redis({ host: "127.0.0.1", port: replica.port, lazyConnect: true, commandTimeout: 500 });
    direct.on("error", () => {});
    const outageMs = await measureOutage(async () => {
      try {
        await client.set("storm:{failover-probe}:w", String(Date.now()));
        return true;
      } catch {
        return false;
      }
    }, killedMs);
    const survived = Number((await client.get(probeKey).catch(() => null)) ?? 0);
    direct.disconnect();
    return {
      what: `Redis master :${master.port} killed while its replica :${replica.port} was frozen (lagging replica promoted)`,
      atS: at(killedMs),
      outageMs,
      detail: `${acknowledged} INCRs acknowledged during the freeze, ${survived} survived: ${acknowledged - survived} acknowledged writes lost`,
    };
  } finally {
    client.disconnect();
  }
}

/** The master port that owns `slot`, from CLUSTER SHARDS (Redis 7). */
function findShardOwner(shards: unknown[], slot: number): number | null {
  for (const shard of shards) {
    const fields = shard as unknown[];
    const slots = fields[fields.indexOf("slots") + 1] as number[];
    const nodes = fields[fields.indexOf("nodes") + 1] as unknown[][];
    let owns = false;
    for (let i = 0; i + 1 < slots.length; i += 2) if (slot >= slots[i]! && slot <= slots[i + 1]!) owns = true;
    if (!owns) continue;
    for (const node of nodes) {
      const role = node[node.indexOf("role") + 1];
      const health = node[node.indexOf("health") + 1];
      if (role === "master" && health === "online") return Number(node[node.indexOf("port") + 1]);
    }
  }
  return null;
}

async function killAppInstance(cluster: HaCluster, at: (ms: number) => number): Promise<FaultReport> {
  const index = cluster.instanceUrls.length - 1;
  const liveness = `${cluster.appUrl}/api/v1/health/live`;
  const probe = async () => {
    try {
      const response = await fetch(liveness, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      return response.ok;
    } catch {
      return false;
    }
  };
  const killedMs = Date.now();
  await cluster.killApp(index);
  // The balancer's view: GETs are retried on another instance, so this measures what a client would notice.
  let failedProbes = 0;
  const probeUntil = Date.now() + APP_DOWN_MS;
  while (Date.now() < probeUntil) {
    if (!(await probe())) failedProbes += 1;
    await sleep(PROBE_INTERVAL_MS);
  }
  await cluster.restartApp(index);
  return {
    what: `app instance ${index + 1} SIGKILLed, restarted after ${APP_DOWN_MS / 1000} s`,
    atS: at(killedMs),
    outageMs: failedProbes * PROBE_INTERVAL_MS,
    detail: `${failedProbes} of the liveness probes through HAProxy failed while it was down; it serves again`,
  };
}
