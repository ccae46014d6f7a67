/**
 * Counting limits on rate-limiter-flexible (a well-kept library; GUIDE: outside the ledger, a library beats our
 * own counters): one fixed window per key in Redis, shared by every app instance, with an in-memory twin used
 * while Redis is down (docs/decisions/010-client-address-and-auth-throttles.md says why that is the safe choice).
 *
 * Each call touches one Redis key (`rl:<name>:<key>`) with one script, so it always stays on one hash slot of a
 * Redis Cluster. A window starts at the first counted event of a key and lasts the rule's whole duration (the
 * key's TTL): an hour is an hour.
 */
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { log } from "../log";
import { ensureRedisConnected, type RedisClient, redis } from "../redis";

/** A limit: at most `points` counted events per key in a window of `durationS` seconds. */
export interface LimitRule {
  /** Names the Redis key space `rl:<name>:` and the log lines. */
  readonly name: string;
  readonly points: number;
  readonly durationS: number;
}

export type CountOutcome = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterS: number };

const KEY_PREFIX = "rl";

interface Backends {
  readonly client: RedisClient | null;
  readonly store: RateLimiterRedis | null;
  readonly memory: RateLimiterMemory;
}

/**
 * One rule's counters. Build it once per process (module scope); it follows the process's Redis client, so a
 * test that closes and reopens Redis gets a limiter on the new client.
 */
export class CounterLimiter {
  private backends: Backends | undefined;

  /**
   * @param rule the limit.
   * @param client where the Redis client comes from: the process's (default), or a test's own.
   */
  constructor(
    readonly rule: LimitRule,
    private readonly client: () => RedisClient | null = redis,
  ) {}

  private current(): Backends {
    const client = this.client();
    if (this.backends && this.backends.client === client) return this.backends;
    const options = {
      points: this.rule.points,
      duration: this.rule.durationS,
      keyPrefix: `${KEY_PREFIX}:${this.rule.name}`,
    };
    this.backends = {
      client,
      // rejectIfRedisNotReady: while disconnected, fail at once (to the memory twin) instead of waiting.
      store: client ? new RateLimiterRedis({ ...options, storeClient: client, rejectIfRedisNotReady: true }) : null,
      memory: new RateLimiterMemory(options),
    };
    return this.backends;
  }

  /**
   * Counts `points` events for `key` and says whether they fit.
   *
   * @param key the rule's subject (an address, an email hash, ...), at most a few hundred characters.
   * @param points events to count, a positive integer (default 1).
   * @returns `allowed`, or `allowed: false` with whole seconds until the key's window ends (at least 1). A
   *   refused call has still been counted: call {@link refund} to take it back.
   * @throws nothing for store failures: Redis off, down or timing out is logged and the in-memory twin decides.
   */
  async count(key: string, points = 1): Promise<CountOutcome> {
    return this.run("consume", key, points);
  }

  /**
   * Takes back `points` counted earlier for `key` (an attempt that turned out not to be a failure, or that was
   * refused). Same store rules as {@link count}.
   */
  async refund(key: string, points = 1): Promise<void> {
    await this.run("reward", key, points);
  }

  private async run(method: "consume" | "reward", key: string, points: number): Promise<CountOutcome> {
    const { client, store, memory } = this.current();
    if (store && client) {
      try {
        await ensureRedisConnected(client);
        await store[method](key, points);
        return { allowed: true };
      } catch (error) {
        if (error instanceof RateLimiterRes) return refused(error);
        log().warn({ err: error, limit: this.rule.name }, "limit store unavailable: this process's memory decides");
      }
    }
    try {
      await memory[method](key, points);
      return { allowed: true };
    } catch (error) {
      if (error instanceof RateLimiterRes) return refused(error);
      throw error;
    }
  }
}

function refused(result: RateLimiterRes): CountOutcome {
  return { allowed: false, retryAfterS: Math.max(1, Math.ceil(result.msBeforeNext / 1000)) };
}
