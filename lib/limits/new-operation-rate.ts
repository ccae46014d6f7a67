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
  cachedOutcomeOf,
  replayCacheKey,
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

/**
 * The gate of {@link gateNewOperation} in one round trip: KEYS[1] the key's replay copy
 * (lib/ledger/replay-cache.ts), KEYS[2] the rate set; ARGV as COUNT_DISTINCT_SCRIPT's. Returns {2, the copy's text}
 * when the key has a copy (nothing counted: a key with a stored response is never rate limited, contract section
 * 9), else what COUNT_DISTINCT_SCRIPT returns. Both keys carry the user's hash tag, so they share a cluster slot.
 */
const GATE_SCRIPT = `
local copy = redis.call('GET', KEYS[1])
if copy then return {2, copy} end
${COUNT_DISTINCT_SCRIPT.replaceAll("KEYS[1]", "KEYS[2]")}`;

type RateClient = RedisClient & {
  walletCountNewOperation(key: string, refId: string, limit: number, windowMs: number): Promise<unknown>;
  walletGateNewOperation(
    copyKey: string,
    rateKey: string,
    refId: string,
    limit: number,
    windowMs: number,
  ): Promise<unknown>;
};

function withScript(client: RedisClient): RateClient {
  const typed = client as RateClient;
  if (typeof typed.walletCountNewOperation !== "function") {
    client.defineCommand("walletCountNewOperation", { numberOfKeys: 1, lua: COUNT_DISTINCT_SCRIPT });
  }
  if (typeof typed.walletGateNewOperation !== "function") {
    client.defineCommand("walletGateNewOperation", { numberOfKeys: 2, lua: GATE_SCRIPT });
  }
  return typed;
}

/** A count reply ({1, 0} or {0, ms}) as a decision; throws on any other reply. */
function countDecision(reply: unknown): NewOperationDecision {
  if (!Array.isArray(reply) || reply.length !== 2) throw new Error(`unexpected reply ${JSON.stringify(reply)}`);
  const [admitted, waitMs] = reply.map(Number);
  if (admitted === 1) return { allowed: true };
  if (admitted !== 0) throw new Error(`unexpected reply ${JSON.stringify(reply)}`);
  return { allowed: false, retryAfterS: Math.max(1, Math.ceil((waitMs ?? NEW_OPERATION_WINDOW_MS) / 1000)) };
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
    return countDecision(
      await withScript(client).walletCountNewOperation(
        newOperationRateKey(key),
        key.refId,
        env().OPS_PER_MINUTE,
        NEW_OPERATION_WINDOW_MS,
      ),
    );
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
 * One round trip (GATE_SCRIPT): the key's replay copy when it has one, else the key counted. Returns `cached`,
 * `counted` with the decision, or `unusable_copy` (a copy that is not a record: nothing counted). A store that
 * cannot be reached counts as allowed, as in {@link admitNewOperation}, and a warning is logged. Never throws.
 */
async function copyOrCount(
  key: OperationKey,
  params: OperationParams,
): Promise<
  | { readonly kind: "cached"; readonly outcome: CachedOutcome }
  | { readonly kind: "counted"; readonly decision: NewOperationDecision }
  | { readonly kind: "unusable_copy" }
> {
  const client = redis();
  if (!client) return { kind: "counted", decision: { allowed: true } };
  try {
    await ensureRedisConnected(client);
    const reply = await withScript(client).walletGateNewOperation(
      replayCacheKey(key),
      newOperationRateKey(key),
      key.refId,
      env().OPS_PER_MINUTE,
      NEW_OPERATION_WINDOW_MS,
    );
    if (Array.isArray(reply) && reply.length === 2 && Number(reply[0]) === 2) {
      const outcome = cachedOutcomeOf(key, params, typeof reply[1] === "string" ? reply[1] : null);
      return outcome ? { kind: "cached", outcome } : { kind: "unusable_copy" };
    }
    return { kind: "counted", decision: countDecision(reply) };
  } catch (error) {
    log().warn({ err: error, userId: key.userId, type: key.type }, "new-operation rate store unavailable: not limited");
    return { kind: "counted", decision: { allowed: true } };
  }
}

/**
 * The order of checks of contract section 9 between authentication and the claim, for top-ups and payments: a key
 * that has a row answers as section 3 says and is never rate limited; only a key with no row can get
 * `rate_limited` (the order, and its one cost: docs/decisions/011-new-operation-rate.md). The replay copy's read
 * and the count are one Redis round trip (GATE_SCRIPT); PostgreSQL is read only for a key refused as new.
 *
 * @param key the operation's key; @param params its fingerprinted parameters (for the replay copy's check).
 * @throws the database driver's error when PostgreSQL cannot be read (500, nothing written).
 */
export async function gateNewOperation(key: OperationKey, params: OperationParams): Promise<NewOperationGate> {
  const first = await copyOrCount(key, params);
  if (first.kind === "cached") return first;
  // A copy that is not usable (not a record) was not counted by the script: count as a separate call.
  const decision = first.kind === "counted" ? first.decision : await admitNewOperation(key);
  if (decision.allowed) return { kind: "proceed" };
  // Refused as new: a key that has a row replays instead (contract section 9: never rate limited).
  if (await findEntryByKey(key)) return { kind: "proceed" };
  return { kind: "rate_limited", retryAfterS: decision.retryAfterS };
}
