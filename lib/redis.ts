/**
 * The one Redis client module (ioredis), created lazily so that importing it during `next build` connects
 * to nothing (stack-notes 4). Redis holds the reward cap's reservations and a replay cache; it is never the
 * guarantee of exactly-once (PostgreSQL is), so every option below prefers failing fast to waiting.
 */
import Redis from "ioredis";
import { env } from "./env";

const globalKey = Symbol.for("wallet.redis.client");
type GlobalWithRedis = typeof globalThis & { [globalKey]?: Redis | null };

function create(): Redis | null {
  const url = env().REDIS_URL;
  if (!url) return null;
  const client = new Redis(url, {
    lazyConnect: true,
    // A reward request may wait at most this long for Redis before answering 503 cap_store_unavailable:
    // 500 ms is far above a loopback round trip (~0.1 ms) and far below a user's patience.
    commandTimeout: 500,
    connectTimeout: 1000,
    // Fail a command at once while disconnected instead of queueing it: a queued reserve could run long
    // after its request answered 503 (stack-notes 21). The scripts are idempotent anyway (case C06).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // Do not resend commands that were in flight when the connection dropped; their outcome is settled by
    // idempotent scripts and, for the cap, reconciled against the ledger.
    autoResendUnfulfilledCommands: false,
    // Reconnect in the background with a capped back-off (50 ms doubling to 2 s) so Redis coming back is
    // noticed quickly without hammering a server that is down.
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
    reconnectOnError: () => false,
  });
  // Connection errors surface through commands (as 503s); an unhandled 'error' event must not crash the app.
  client.on("error", () => {});
  return client;
}

/** The process's Redis client, or null when REDIS_URL is unset (rewards then answer 503). */
export function redis(): Redis | null {
  const g = globalThis as GlobalWithRedis;
  if (g[globalKey] === undefined) g[globalKey] = create();
  return g[globalKey];
}

/**
 * Ensures the client is connected (lazyConnect): connects if idle, waits up to connectTimeout otherwise.
 * Throws when Redis is unreachable.
 */
export async function ensureRedisConnected(client: Redis): Promise<void> {
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

/** Closes the client (CLIs and tests). */
export async function closeRedis(): Promise<void> {
  const g = globalThis as GlobalWithRedis;
  const client = g[globalKey];
  g[globalKey] = undefined;
  if (client) await client.quit().catch(() => client.disconnect());
}
