/**
 * Helpers for the reward tests: a private redis-server per destructive test (FLUSHALL, CLIENT PAUSE, garbage,
 * shutdown would disturb other test files sharing the stack's Redis), clients with exactly the app's options,
 * and readers of what the ledger credited.
 */
import Redis, { Cluster } from "ioredis";
import { redis } from "../../lib/redis";
import { RedisRewardCapStore, type RedisRewardCapStoreOptions } from "../../lib/rewards/cap-store";
import { startRedisServer, type RedisServer } from "../../scripts/lib/redis-server";
import { testPool } from "./db";

export interface OwnRedis {
  readonly server: RedisServer;
  /** A client with exactly the app's options (lib/redis.ts: commandTimeout 500 ms, no offline queue, no resend). */
  readonly client: Redis;
  /** A plain client for staging (no command timeout): CLIENT PAUSE, FLUSHALL, garbage, reads. */
  readonly admin: Redis;
  /** The cap store on {@link client}. */
  readonly store: RedisRewardCapStore;
  /** Closes both clients and stops the server. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts a private redis-server (scripts/lib/redis-server.ts) and a cap store on a client that copies the
 * app's client options (`redis().duplicate()` with only host and port changed), so timeouts behave as in the app.
 */
export async function startOwnRedis(storeOptions: RedisRewardCapStoreOptions = {}): Promise<OwnRedis> {
  const server = await startRedisServer();
  const shared = redis();
  if (!shared || shared instanceof Cluster) throw new Error("REDIS_URL is not set: run under the integration project");
  const client = shared.duplicate({ host: "127.0.0.1", port: server.port });
  client.on("error", () => {});
  // No command timeout and a plain offline queue: staging commands must wait out a pause, not fail.
  const admin = new Redis({ host: "127.0.0.1", port: server.port, lazyConnect: true, maxRetriesPerRequest: 1 });
  admin.on("error", () => {});
  let stopped = false;
  return {
    server,
    client,
    admin,
    store: new RedisRewardCapStore(client, storeOptions),
    async stop() {
      if (stopped) return;
      stopped = true;
      client.disconnect();
      admin.disconnect();
      await server.stop();
    },
  };
}

/** The ledger's succeeded rewards of `userId` on `day`, in minor units (read through the test pool). */
export async function creditedRewardsMinor(userId: string, day: string): Promise<number> {
  const result = await testPool().query<{ n: string }>(
    `SELECT COALESCE(sum(amount_minor), 0)::text AS n FROM ledger_entries
      WHERE user_id = $1 AND type = 'reward' AND status = 'succeeded' AND params->>'day' = $2`,
    [userId, day],
  );
  return Number(result.rows[0]?.n ?? 0);
}

/** Every reward row of `userId` (any status). */
export async function rewardRowCount(userId: string): Promise<number> {
  const result = await testPool().query<{ n: number }>(
    "SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = $1 AND type = 'reward'",
    [userId],
  );
  return result.rows[0]?.n ?? 0;
}

/** A promise with its resolve function exposed (to release staged work at one instant). */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
