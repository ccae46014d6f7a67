/**
 * The one Redis client module (ioredis), created lazily so that importing it during `next build` connects
 * to nothing (docs/development.md note 4). Redis holds the reward cap's reservations and a replay cache; it is never
 * the guarantee of exactly-once (PostgreSQL is), so every option below prefers failing fast to waiting.
 *
 * With `REDIS_CLUSTER_NODES` set the client is an ioredis `Cluster`: every key the app writes carries
 * the user as a `{hash tag}`, so each multi-key script runs on one slot (docs/development.md note 28).
 */
import Redis, { Cluster, type RedisOptions } from "ioredis";
import { env } from "./env";

/** A standalone client or a Cluster client: both run the app's commands and scripts the same way. */
export type RedisClient = Redis | Cluster;

const globalKey = Symbol.for("wallet.redis.client");
type GlobalWithRedis = typeof globalThis & { [globalKey]?: RedisClient | null };

/** The options every connection of the app uses, standalone or per Cluster node. */
export const REDIS_CONNECTION_OPTIONS: RedisOptions = {
  lazyConnect: true,
  // A reward request may wait at most this long for Redis before answering 503 cap_store_unavailable:
  // 500 ms is far above a loopback round trip (~0.1 ms) and far below a user's patience.
  commandTimeout: 500,
  connectTimeout: 1000,
  // Fail a command at once while disconnected instead of queueing it: a queued reserve could run long
  // after its request answered 503 (docs/development.md note 21). The scripts are idempotent anyway (case C06).
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  // Do not resend commands that were in flight when the connection dropped; their outcome is settled by
  // idempotent scripts and, for the cap, reconciled against the ledger.
  autoResendUnfulfilledCommands: false,
  // Reconnect in the background with a capped back-off (50 ms doubling to 2 s) so Redis coming back is
  // noticed quickly without hammering a server that is down.
  retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
  reconnectOnError: () => false,
};

/**
 * Parses `REDIS_CLUSTER_NODES` (`host:port,host:port`) into ioredis's seed list. Throws RangeError on a port
 * outside 1..65535 (lib/env.ts has already checked the shape).
 */
export function parseClusterNodes(value: string): { host: string; port: number }[] {
  return value.split(",").map((entry) => {
    const at = entry.lastIndexOf(":");
    const port = Number(entry.slice(at + 1));
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`bad port in ${entry}`);
    return { host: entry.slice(0, at), port };
  });
}

/**
 * A Cluster client for `nodes` with the app's options on every node connection, failing fast like the standalone
 * client: no offline queue; 16 redirections at most (a slot moves once per failover); 100 ms between retries
 * while a slot has no master (CLUSTERDOWN for ~0.8 s and writes to the slots of a killed master back after ~4.5 s
 * at cluster-node-timeout 2000, docs/development.md note 28), bounded by commandTimeout anyway.
 */
export function createClusterClient(nodes: { host: string; port: number }[]): Cluster {
  return new Cluster(nodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRedirections: 16,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    // Slots are re-read at most every second when a node answers MOVED or dies (ioredis's own default is 5 s).
    slotsRefreshInterval: 1000,
    clusterRetryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2000),
    // Reads and writes go to masters: a replica's copy of a counter may lag (docs/development.md note 28).
    scaleReads: "master",
    redisOptions: REDIS_CONNECTION_OPTIONS,
  });
}

function create(): RedisClient | null {
  const { REDIS_CLUSTER_NODES, REDIS_URL } = env();
  let client: RedisClient;
  if (REDIS_CLUSTER_NODES) client = createClusterClient(parseClusterNodes(REDIS_CLUSTER_NODES));
  else if (REDIS_URL) client = new Redis(REDIS_URL, REDIS_CONNECTION_OPTIONS);
  else return null;
  // Connection errors surface through commands (as 503s); an unhandled 'error' event must not crash the app.
  client.on("error", () => {});
  return client;
}

/** The process's Redis client (Cluster when REDIS_CLUSTER_NODES is set), or null when neither is set. */
export function redis(): RedisClient | null {
  const g = globalThis as GlobalWithRedis;
  if (g[globalKey] === undefined) g[globalKey] = create();
  return g[globalKey];
}

/**
 * Ensures the client is connected (lazyConnect): connects if idle, waits up to connectTimeout otherwise.
 * Throws when Redis is unreachable.
 */
export async function ensureRedisConnected(client: RedisClient): Promise<void> {
  if (client.status === "ready") return;
  if (client.status === "wait" || client.status === "end") {
    await client.connect();
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`redis not ready (${client.status})`));
    }, 1000);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      client.off("ready", onReady);
    };
    client.once("ready", onReady);
  });
}

/**
 * Closes the client, if one was created (CLIs and tests): `QUIT` when connected, so commands already sent are
 * answered first; a client that never connected (lazyConnect) or cannot send is disconnected at once, which also
 * stops its reconnect timer. Afterwards nothing of Redis keeps the process alive (case C30). Never throws.
 */
export async function closeRedis(): Promise<void> {
  const g = globalThis as GlobalWithRedis;
  const client = g[globalKey];
  g[globalKey] = undefined;
  if (!client) return;
  // A lazy client that never connected would open a connection only to send QUIT on it.
  if (client.status === "wait") {
    client.disconnect();
    return;
  }
  await client.quit().catch(() => client.disconnect());
}
