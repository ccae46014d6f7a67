/**
 * OPS_PER_MINUTE (contract section 9): per user and type, at most that many new operation keys in any minute,
 * counted once per key by one Redis script and failing open; why and how: docs/decisions/011-new-operation-rate.md.
 */
import { env } from "../env";
import { log } from "../log";
import {
  findEntryByKey,
  type OperationParams,
  type OperationKey,
  type CachedOutcome,
  readCachedReplay,
} from "../ledger";
import { ensureRedisConnected, type RedisClient, redis } from "../redis";

/** The window, in ms: "a minute" (contract section 9). */
export const NEW_OPERATION_WINDOW_MS = 60_000;

/**
 * KEYS[1] the user's set for one type; ARGV[1] the ref id; ARGV[2] the limit; ARGV[3] the window in ms.
 * Returns {1, 0} when the ref id is (now or already) counted, {0, ms until a slot frees} when refused.
 * Refuses (error reply) a key of another type rather than overwrite it.
 */
const COUNT_DISTINCT_SCRIPT = `
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'zset' and kind ~= 'none' then return redis.error_reply('WRONGTYPE new-operation rate key') end
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local window_ms = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms - window_ms)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return {1, 0} end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(oldest[2]) + window_ms - now_ms}
end
redis.call('ZADD', KEYS[1], now_ms, ARGV[1])
redis.call('PEXPIRE', KEYS[1], window_ms)
return {1, 0}
`;

type RateClient = RedisClient & {
  walletCountNewOperation(key: string, refId: string, limit: number, windowMs: number): Promise<unknown>;
};

function withScript(client: RedisClient): RateClient {
  const typed = client as RateClient;
  if (typeof typed.walletCountNewOperation !== "function") {
    client.defineCommand("walletCountNewOperation", { numberOfKeys: 1, lua: COUNT_DISTINCT_SCRIPT });
  }
  return typed;
}

/** The set of one user's new operations of one type. */
export function newOperationRateKey(key: OperationKey): string {
  return `ops:{${key.userId}}:${key.type}`;
}

export type NewOperationDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly retryAfterS: number };

/**
 * Counts `key` as a new operation of its user and type, once however often it is called, and says whether it
 * fits under OPS_PER_MINUTE. Call it only for a key with no ledger row (see the order of checks, contract
 * section 9), after validation, authentication and same-origin.
 *
 * @param key the operation's key (user from the session or token, type fixed by the route, ref id validated).
 * @returns `allowed` (counted now or before), or `allowed: false` with the whole seconds until the oldest key of
 *   the window leaves it (at least 1).
 * @throws nothing for store failures: the operation is allowed and a warning logged.
 */
export async function admitNewOperation(key: OperationKey): Promise<NewOperationDecision> {
  const client = redis();
  if (!client) return { allowed: true };
  try {
    await ensureRedisConnected(client);
    const reply = await withScript(client).walletCountNewOperation(
      newOperationRateKey(key),
      key.refId,
      env().OPS_PER_MINUTE,
      NEW_OPERATION_WINDOW_MS,
    );
    if (!Array.isArray(reply) || reply.length !== 2) throw new Error(`unexpected reply ${JSON.stringify(reply)}`);
    const [admitted, waitMs] = reply.map(Number);
    if (admitted === 1) return { allowed: true };
    return { allowed: false, retryAfterS: Math.max(1, Math.ceil((waitMs ?? NEW_OPERATION_WINDOW_MS) / 1000)) };
  } catch (error) {
    log().warn({ err: error, userId: key.userId, type: key.type }, "new-operation rate store unavailable: not limited");
    return { allowed: true };
  }
}

/** The refusal every money operation answers with when {@link admitNewOperation} says no. */
export function rateLimitedResult(retryAfterS: number) {
  return {
    kind: "refused",
    code: "rate_limited",
    detail: `More than ${env().OPS_PER_MINUTE} new operations of this kind in a minute; nothing was done. Retry after ${retryAfterS} s.`,
    retryAfterS,
  } as const;
}

export type NewOperationGate =
  /** The Redis copy of the key's stored response answers (replay or mismatch): no rate limit involved. */
  | { readonly kind: "cached"; readonly outcome: CachedOutcome }
  /** Go on to the claim: the key has a row (it will replay, mismatch or wait) or was admitted as new. */
  | { readonly kind: "proceed" }
  /** A key with no row, over OPS_PER_MINUTE: answer 429 rate_limited; nothing was written. */
  | { readonly kind: "rate_limited"; readonly retryAfterS: number };

/**
 * The order of checks of contract section 9 between authentication and the claim, for top-ups and payments: a key
 * that has a row answers as section 3 says and is never rate limited; only a key with no row can get
 * `rate_limited` (the order, and its one cost: docs/decisions/011-new-operation-rate.md).
 *
 * @param key the operation's key; @param params its fingerprinted parameters (for the replay copy's check).
 * @throws the database driver's error when PostgreSQL cannot be read (500, nothing written).
 */
export async function gateNewOperation(key: OperationKey, params: OperationParams): Promise<NewOperationGate> {
  const cached = await readCachedReplay(key, params);
  if (cached) return { kind: "cached", outcome: cached };
  const decision = await admitNewOperation(key);
  if (decision.allowed) return { kind: "proceed" };
  // Refused as new: a key that has a row replays instead (contract section 9: never rate limited).
  if (await findEntryByKey(key)) return { kind: "proceed" };
  return { kind: "rate_limited", retryAfterS: decision.retryAfterS };
}
