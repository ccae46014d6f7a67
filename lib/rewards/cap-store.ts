/**
 * The reward cap's reservation store in Redis (contract section 6, cases C06 and C13).
 *
 * The cap is a reservation, never a read: a Lua script checks the day's counter and raises it in one atomic
 * step, so of 50 parallel requests at 45 of a 50 cap exactly one fits (C13). Reserve, release and confirm are
 * idempotent per reservation attempt and leave a tombstone, because ioredis cannot promise that a command
 * that timed out on the client never runs (docs/development.md note 21, C06): a reserve that runs after its own release
 * changes nothing, a second release changes nothing.
 *
 * Keys (all carry the hash tag `{<userId>}`, so one user's keys live in one Redis Cluster slot and one
 * script may touch them together):
 *  - counter `reward:cap:{<userId>}:<day>`: a decimal integer, the minor units credited or reserved that day.
 *  - operation `reward:cap:{<userId>}:<day>:op:<adId>`: a hash for one reward operation (ref id
 *    `<adId>:<day>`): `state` (reserved | confirmed | released), `amount`, `holders` (attempts holding the
 *    reservation), `at` (unix ms of the reservation) and one field `a:<attemptId>` per request attempt
 *    (held | released | confirmed). Concurrent duplicates of one operation share one reservation, so the
 *    operation is counted at most once, and it is given back only when the last holder releases it.
 *
 * A missing counter (cold or flushed) is seeded from the ledger with `SET ... NX EXAT` before the first
 * reservation of the day, so a late seeder never erases reservations. Every key expires a grace period
 * after the local day ends.
 *
 * Every failure of Redis (off, unreachable, timeout, a value that is not ours at a key: the scripts refuse
 * garbage) is thrown as {@link CapStoreUnavailableError}, so callers fail closed (503 cap_store_unavailable).
 * Redis is never the guarantee of exactly-once: PostgreSQL is.
 */
import { Cluster } from "ioredis";
import { ensureRedisConnected, redis, type RedisClient } from "../redis";
import { rewardDayEndsAt } from "./reward-day";
import { sumCreditedRewards } from "./sum-credited-rewards";

/** Why the store could not answer. All of them mean the same to a caller: 503, nothing credited. */
export type CapStoreFailureReason =
  /** No Redis is configured (REDIS_URL unset). */
  | "off"
  /** Not connected, connection refused or closed. */
  | "unreachable"
  /** No reply within the client's commandTimeout (the command may still run later: C06). */
  | "timeout"
  /** Redis answered with an error: a script refused garbage at a key, or a key holds another type. */
  | "rejected"
  /** A reply of a shape no script of ours produces, or a counter that would not seed. */
  | "malformed";

/** Thrown by every operation of the store when Redis cannot be trusted to answer; `cause` is the original error. */
export class CapStoreUnavailableError extends Error {
  constructor(
    readonly reason: CapStoreFailureReason,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(`cap store unavailable (${reason}): ${message}`, options);
    this.name = "CapStoreUnavailableError";
  }
}

/** One request attempt's reservation for one reward operation. */
export interface CapOperation {
  /** From the authenticated session or token. */
  readonly userId: string;
  /** `YYYY-MM-DD` in REWARD_TZ. */
  readonly day: string;
  /** The ad id; with `day` it is the reward's ref id `<adId>:<day>`. */
  readonly adId: string;
  /** Unique per request attempt (a random UUID): what makes reserve/release/confirm idempotent (C06). */
  readonly attemptId: string;
  /** When the day's keys expire, unix seconds (see {@link capKeysExpireAtS}). */
  readonly keysExpireAtS: number;
}

export type CapReserveOutcome =
  /** This attempt raised the counter by the amount; `counterMinor` is the counter after it. */
  | { readonly kind: "reserved"; readonly counterMinor: number }
  /** The operation is already counted (this attempt resent, or a concurrent duplicate holds it); nothing changed. */
  | { readonly kind: "already_reserved" }
  /** The amount does not fit under the cap; nothing changed. `counterMinor` is the counter seen. */
  | { readonly kind: "over_cap"; readonly counterMinor: number }
  /** This attempt was released before its reserve ran (tombstone): nothing changed. */
  | { readonly kind: "after_release" };

export type CapReleaseOutcome =
  /** This attempt was the last holder: the amount went back to the counter. */
  | { readonly kind: "released" }
  /** Another attempt of the same operation still holds the reservation: the counter keeps it. */
  | { readonly kind: "shared" }
  /** The operation's credit landed (confirmed): it stays counted. */
  | { readonly kind: "kept_confirmed" }
  /** The counter is gone, or was re-seeded after this reservation: nothing is given back (never below what landed). */
  | { readonly kind: "counter_reset" }
  /** No reserve of this attempt has run yet: the tombstone makes a late one change nothing. */
  | { readonly kind: "tombstoned" }
  /** This attempt was released or confirmed before: nothing changed. */
  | { readonly kind: "noop" };

export type CapConfirmOutcome =
  /** The reservation became part of the credited sum (counter unchanged). */
  | { readonly kind: "confirmed" }
  /** Another attempt confirmed the operation first; counter unchanged. */
  | { readonly kind: "already_confirmed" }
  /** The reservation had been given back or lost (flush): the amount was counted again. */
  | { readonly kind: "recounted" }
  /** This attempt confirmed before. */
  | { readonly kind: "noop" };

/** The three operations creditReward needs; tests substitute broken implementations as negative controls. */
export interface RewardCapStore {
  /**
   * Reserves `amountMinor` of the day's `capMinor` for `op` (minor units), seeding a missing counter from
   * the ledger first. Throws {@link CapStoreUnavailableError} on any Redis failure.
   */
  reserve(op: CapOperation, amountMinor: number, capMinor: number): Promise<CapReserveOutcome>;
  /**
   * Gives `op`'s reservation back when its credit did not land, then raises the counter to at least
   * `floorMinor` (the day's credited total in the ledger) when given. Idempotent. Throws
   * {@link CapStoreUnavailableError}.
   */
  release(op: CapOperation, floorMinor?: number): Promise<CapReleaseOutcome>;
  /**
   * Records that `op`'s credit of `amountMinor` landed, then raises the counter to at least `floorMinor` when
   * given. Idempotent. Throws {@link CapStoreUnavailableError}.
   */
  confirm(op: CapOperation, amountMinor: number, floorMinor?: number): Promise<CapConfirmOutcome>;
}

/** One reward operation's hash as read back (audit, tests). */
export interface CapOperationState {
  readonly adId: string;
  readonly state: "reserved" | "confirmed" | "released" | null;
  readonly amountMinor: number | null;
  readonly holders: number;
  /** Unix ms of the reservation, null when never reserved (tombstones only). */
  readonly reservedAtMs: number | null;
}

/** A day's counter and operations as read back in one MULTI (audit, tests). */
export interface CapDayState {
  readonly userId: string;
  readonly day: string;
  /** The counter in minor units; null when absent. Throws (rejected) when it is not an integer. */
  readonly counterMinor: number | null;
  readonly operations: CapOperationState[];
}

/**
 * How long the day's keys outlive the local day, in seconds. One hour: far longer than any request that
 * computed its day before midnight can still be running (statement timeout 15 s plus the idempotency wait
 * 3 s), and than a late command ioredis gave up on (C06), so tombstones outlive every late reserve; short
 * enough that a day's keys do not pile up.
 */
export const CAP_KEYS_GRACE_S = 3600;

/**
 * Reserve rounds: the first may find the counter missing and seed it; a second is needed only if the counter
 * vanished again in between (a flush). A third missing counter means something deletes it: fail closed.
 */
const RESERVE_ROUNDS_MAX = 3;

/** Keys per SCAN step (a hint to Redis): large enough that an audit over 10^6 keys takes ~10^3 round trips. */
const SCAN_COUNT = 1000;

/** The counter key of `userId`'s cap on `day`. */
export function capCounterKey(userId: string, day: string): string {
  return `reward:cap:{${userId}}:${day}`;
}

/** The hash key of one reward operation (`<adId>:<day>`) of `userId`. */
export function capOperationKey(userId: string, day: string, adId: string): string {
  return `${capCounterKey(userId, day)}:op:${adId}`;
}

/** Parses a key of this store: counter (`adId` null) or operation. Null for other keys. */
export function parseCapKey(key: string): { userId: string; day: string; adId: string | null } | null {
  const match = /^reward:cap:\{([^{}]+)\}:(\d{4}-\d{2}-\d{2})(?::op:(.+))?$/.exec(key);
  if (!match) return null;
  return { userId: match[1]!, day: match[2]!, adId: match[3] ?? null };
}

/**
 * When the keys of `day` expire, in unix seconds: {@link CAP_KEYS_GRACE_S} after the day ends in `timeZone`,
 * and never earlier than that grace from `nowMs` (a key written with a past expiry would vanish at once).
 */
export function capKeysExpireAtS(day: string, timeZone: string, nowMs: number = Date.now()): number {
  const endsAtMs = Math.max(rewardDayEndsAt(day, timeZone).getTime(), nowMs);
  return Math.ceil(endsAtMs / 1000) + CAP_KEYS_GRACE_S;
}

// A counter is a decimal integer of at most 15 digits (below 2^53, exact in Lua's doubles). Anything else
// at the key is garbage the scripts refuse to interpret, so the caller answers 503 instead of guessing.
const LUA_COUNTER_CHECK = `
local function counter_or_error(key, raw)
  if not raw then return nil end
  if string.len(raw) > 15 or not string.match(raw, '^%d+$') then
    error({err = 'CAPGARBAGE ' .. key .. ' does not hold a counter'})
  end
  return tonumber(raw)
end
-- Raises the counter to at least floor (the day's credited total in the ledger, never above the truth), keeping
-- whatever reservations it holds above that. floor < 0: nothing to do.
local function raise_to_floor(key, floor, expiry)
  if floor < 0 then return end
  local counted = counter_or_error(key, redis.call('GET', key))
  if counted == nil or counted < floor then redis.call('SET', key, floor, 'EXAT', expiry) end
end
-- Reads a field of an operation's hash. Until 2026-12 a confirmed reservation was stored as 'settled'; a day's keys
-- written before the rename read as 'confirmed' (they expire with their day, decision 053).
local function cap_field(key, field)
  local value = redis.call('HGET', key, field)
  if value == 'settled' then return 'confirmed' end
  return value
end`;

// KEYS[1] counter, KEYS[2] operation. ARGV[1] attempt id, ARGV[2] amount, ARGV[3] cap (minor units),
// ARGV[4] key expiry (unix s), ARGV[5] now (unix ms). Reads everything before writing anything, so a refusal
// leaves no partial write (Redis does not roll scripts back).
const RESERVE_LUA = `${LUA_COUNTER_CHECK}
local attempt = 'a:' .. ARGV[1]
local mine = cap_field(KEYS[2], attempt)
if mine == 'released' then return {'after_release', -1} end
if mine then return {'already_reserved', -1} end
local counted = counter_or_error(KEYS[1], redis.call('GET', KEYS[1]))
if counted == nil then return {'unseeded', -1} end
local state = cap_field(KEYS[2], 'state')
if state == 'reserved' or state == 'confirmed' then
  redis.call('HSET', KEYS[2], attempt, 'held')
  if state == 'reserved' then redis.call('HINCRBY', KEYS[2], 'holders', 1) end
  return {'already_reserved', counted}
end
if state and state ~= 'released' then
  return redis.error_reply('CAPGARBAGE ' .. KEYS[2] .. ' has an unknown state')
end
local amount = tonumber(ARGV[2])
if counted + amount > tonumber(ARGV[3]) then return {'over_cap', counted} end
redis.call('INCRBY', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], 'state', 'reserved', 'amount', ARGV[2], 'holders', 1, 'at', ARGV[5], attempt, 'held')
redis.call('EXPIREAT', KEYS[2], ARGV[4], 'NX')
return {'reserved', counted + amount}`;

// KEYS[1] counter, KEYS[2] operation. ARGV[1] attempt id, ARGV[2] key expiry (unix s), ARGV[3] floor (the
// day's ledger total in minor units, or -1: see raise_to_floor), applied after the release.
const RELEASE_LUA = `${LUA_COUNTER_CHECK}
local function release()
local attempt = 'a:' .. ARGV[1]
local mine = cap_field(KEYS[2], attempt)
if mine == 'released' or mine == 'confirmed' then return {'noop', -1} end
local counted = counter_or_error(KEYS[1], redis.call('GET', KEYS[1]))
local state = cap_field(KEYS[2], 'state')
local amount_raw = redis.call('HGET', KEYS[2], 'amount')
if state == 'reserved' and not (amount_raw and string.match(amount_raw, '^%d+$')) then
  return redis.error_reply('CAPGARBAGE ' .. KEYS[2] .. ' has no amount')
end
redis.call('HSET', KEYS[2], attempt, 'released')
redis.call('EXPIREAT', KEYS[2], ARGV[2], 'NX')
if not mine then return {'tombstoned', -1} end
if state ~= 'reserved' then return {'kept_confirmed', -1} end
if redis.call('HINCRBY', KEYS[2], 'holders', -1) > 0 then return {'shared', -1} end
redis.call('HSET', KEYS[2], 'state', 'released')
local amount = tonumber(amount_raw)
-- A counter below this reservation was re-seeded from the ledger after it was made, so it does not contain
-- it: taking the amount off would drop the counter below what landed.
if counted == nil or counted < amount then return {'counter_reset', -1} end
redis.call('DECRBY', KEYS[1], amount)
return {'released', counted - amount}
end
local reply = release()
raise_to_floor(KEYS[1], tonumber(ARGV[3]), ARGV[2])
return reply`;

// KEYS[1] counter, KEYS[2] operation. ARGV[1] attempt id, ARGV[2] amount, ARGV[3] key expiry (unix s),
// ARGV[4] now (unix ms), ARGV[5] floor (the day's ledger total in minor units, or -1), applied after the confirm.
const CONFIRM_LUA = `${LUA_COUNTER_CHECK}
local function confirm()
local attempt = 'a:' .. ARGV[1]
local mine = cap_field(KEYS[2], attempt)
if mine == 'confirmed' then return {'noop', -1} end
local counted = counter_or_error(KEYS[1], redis.call('GET', KEYS[1]))
local state = cap_field(KEYS[2], 'state')
if state == 'confirmed' then
  redis.call('HSET', KEYS[2], attempt, 'confirmed')
  return {'already_confirmed', -1}
end
if state == 'reserved' then
  redis.call('HSET', KEYS[2], 'state', 'confirmed', attempt, 'confirmed')
  return {'confirmed', -1}
end
-- The credit landed but its reservation was given back or lost (a flush, a failover): count it again, so the
-- counter never stays below what landed. With the day's ledger total known (the floor, which includes this
-- credit) the raise below does that exactly, and an INCRBY would count the credit twice when a repair or a
-- re-seed already read it from the ledger. Without it, INCRBY: if a re-seed already read this credit this
-- over-counts, which refuses a reward and never lets the cap be exceeded. A missing counter is seeded from the
-- ledger, which holds this credit.
if counted ~= nil and tonumber(ARGV[5]) < 0 then redis.call('INCRBY', KEYS[1], ARGV[2]) end
redis.call('HSET', KEYS[2], 'state', 'confirmed', 'amount', ARGV[2], 'holders', 0, 'at', ARGV[4], attempt, 'confirmed')
redis.call('EXPIREAT', KEYS[2], ARGV[3], 'NX')
return {'recounted', -1}
end
local reply = confirm()
raise_to_floor(KEYS[1], tonumber(ARGV[5]), ARGV[3])
return reply`;

// KEYS[1] counter. ARGV[1] floor (minor units), ARGV[2] key expiry (unix s). Raises an existing counter to the
// floor; a missing counter is left to the seed of the next reserve (contract section 6).
const RAISE_LUA = `${LUA_COUNTER_CHECK}
local counted = counter_or_error(KEYS[1], redis.call('GET', KEYS[1]))
if counted == nil then return {'missing', -1} end
if counted >= tonumber(ARGV[1]) then return {'kept', counted} end
raise_to_floor(KEYS[1], tonumber(ARGV[1]), ARGV[2])
return {'raised', counted}`;

type ScriptReply = [string, number];

interface CapScripts {
  rewardCapReserve(counterKey: string, operationKey: string, ...args: (string | number)[]): Promise<unknown>;
  rewardCapRelease(counterKey: string, operationKey: string, ...args: (string | number)[]): Promise<unknown>;
  rewardCapConfirm(counterKey: string, operationKey: string, ...args: (string | number)[]): Promise<unknown>;
  rewardCapRaise(counterKey: string, ...args: (string | number)[]): Promise<unknown>;
}

const clientsWithScripts = new WeakSet<RedisClient>();

/** Registers the scripts on `client` once (ioredis sends EVALSHA and falls back to EVAL on NOSCRIPT). */
function withScripts(client: RedisClient): RedisClient & CapScripts {
  if (!clientsWithScripts.has(client)) {
    client.defineCommand("rewardCapReserve", { numberOfKeys: 2, lua: RESERVE_LUA });
    client.defineCommand("rewardCapRelease", { numberOfKeys: 2, lua: RELEASE_LUA });
    client.defineCommand("rewardCapConfirm", { numberOfKeys: 2, lua: CONFIRM_LUA });
    client.defineCommand("rewardCapRaise", { numberOfKeys: 1, lua: RAISE_LUA });
    clientsWithScripts.add(client);
  }
  return client as RedisClient & CapScripts;
}

function isScriptReply(value: unknown): value is ScriptReply {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === "string" && typeof value[1] === "number";
}

/** Names the failure for logs and the error's `reason`; every reason leads to the same 503. */
function failureReason(error: unknown): CapStoreFailureReason {
  if (error instanceof Error && error.name === "ReplyError") return "rejected";
  // ioredis rejects a command whose reply did not arrive within commandTimeout with exactly this message
  // and no code; it is used here for the log line only, never to decide an outcome.
  if (error instanceof Error && error.message === "Command timed out") return "timeout";
  return "unreachable";
}

export interface RedisRewardCapStoreOptions {
  /**
   * The ledger's credited rewards for a user and day, in minor units: what a missing counter is seeded with.
   * Default: {@link sumCreditedRewards} on the app's pool.
   */
  readonly seedMinor?: (userId: string, day: string) => Promise<number>;
}

/**
 * The Redis implementation of {@link RewardCapStore}, on `client` (null: no Redis configured, so every
 * operation throws {@link CapStoreUnavailableError} with reason "off").
 */
export class RedisRewardCapStore implements RewardCapStore {
  private readonly seedMinor: (userId: string, day: string) => Promise<number>;

  constructor(
    private readonly client: RedisClient | null,
    options: RedisRewardCapStoreOptions = {},
  ) {
    this.seedMinor =
      options.seedMinor ?? (async (userId, day) => (await sumCreditedRewards(userId, day)).creditedMinor);
  }

  /** Runs `command` on a connected client, turning every failure into {@link CapStoreUnavailableError}. */
  private async run<T>(command: (client: RedisClient & CapScripts) => Promise<T>): Promise<T> {
    const client = this.client;
    if (!client) throw new CapStoreUnavailableError("off", "REDIS_URL is not set");
    try {
      await ensureRedisConnected(client);
      return await command(withScripts(client));
    } catch (error) {
      if (error instanceof CapStoreUnavailableError) throw error;
      throw new CapStoreUnavailableError(failureReason(error), error instanceof Error ? error.message : String(error), {
        cause: error,
      });
    }
  }

  private async script(name: keyof CapScripts, op: CapOperation, args: (string | number)[]): Promise<ScriptReply> {
    const reply = await this.run((client) =>
      client[name](
        capCounterKey(op.userId, op.day),
        capOperationKey(op.userId, op.day, op.adId),
        op.attemptId,
        ...args,
      ),
    );
    if (!isScriptReply(reply))
      throw new CapStoreUnavailableError("malformed", `${name} replied ${JSON.stringify(reply)}`);
    return reply;
  }

  /**
   * Reserves `amountMinor` for `op` if the day's counter plus it stays at or below `capMinor` (minor units),
   * atomically (case C13). A missing counter is first seeded from the ledger with `SET NX EXAT` (contract
   * section 6): never over an existing counter, so reservations made meanwhile survive.
   *
   * Returns reserved | already_reserved | over_cap | after_release (see {@link CapReserveOutcome}).
   * Throws {@link CapStoreUnavailableError} on any Redis failure, including garbage at the counter key; a
   * database error of the seed read is thrown as it comes.
   */
  async reserve(op: CapOperation, amountMinor: number, capMinor: number): Promise<CapReserveOutcome> {
    for (let round = 0; round < RESERVE_ROUNDS_MAX; round++) {
      const [status, counterMinor] = await this.script("rewardCapReserve", op, [
        amountMinor,
        capMinor,
        op.keysExpireAtS,
        Date.now(),
      ]);
      switch (status) {
        case "reserved":
          return { kind: "reserved", counterMinor };
        case "over_cap":
          return { kind: "over_cap", counterMinor };
        case "already_reserved":
          return { kind: "already_reserved" };
        case "after_release":
          return { kind: "after_release" };
        case "unseeded": {
          // Read before SET NX: if another seeder wins, its value stands and ours is dropped, so a seed can
          // only be as old as the moment before the first reservation of the day (no reservation exists
          // without a counter).
          const seedMinor = await this.seedMinor(op.userId, op.day);
          if (!Number.isSafeInteger(seedMinor) || seedMinor < 0) {
            throw new CapStoreUnavailableError("malformed", `seed ${seedMinor} is not a non-negative integer`);
          }
          await this.run((client) =>
            client.set(capCounterKey(op.userId, op.day), seedMinor, "EXAT", op.keysExpireAtS, "NX"),
          );
          continue;
        }
        default:
          throw new CapStoreUnavailableError("malformed", `reserve replied ${status}`);
      }
    }
    throw new CapStoreUnavailableError(
      "malformed",
      `counter ${capCounterKey(op.userId, op.day)} vanished ${RESERVE_ROUNDS_MAX} times after seeding`,
    );
  }

  /**
   * Releases `op`'s reservation (contract section 6: on every path where the credit does not land), then raises
   * the counter to at least `floorMinor` (the day's ledger total) when given: a counter a failover left below the
   * truth comes back up.
   * Idempotent: a second release, or a release before the reserve ran, changes the counter at most once;
   * the tombstone it leaves makes a reserve that arrives later change nothing (C06).
   *
   * Returns a {@link CapReleaseOutcome}. Throws {@link CapStoreUnavailableError}.
   */
  async release(op: CapOperation, floorMinor?: number): Promise<CapReleaseOutcome> {
    const [status] = await this.script("rewardCapRelease", op, [op.keysExpireAtS, floorArgument(floorMinor)]);
    switch (status) {
      case "released":
      case "shared":
      case "kept_confirmed":
      case "counter_reset":
      case "tombstoned":
      case "noop":
        return { kind: status };
      default:
        throw new CapStoreUnavailableError("malformed", `release replied ${status}`);
    }
  }

  /**
   * Records that `op`'s credit of `amountMinor` landed: its reservation becomes part of the credited sum and
   * the counter is unchanged; if the reservation had been given back or lost, the amount is counted again,
   * so the counter never stays below what landed; then the counter is raised to at least `floorMinor` (the day's
   * ledger total, read in the credit's own transaction) when given. Idempotent.
   *
   * Returns a {@link CapConfirmOutcome}. Throws {@link CapStoreUnavailableError}.
   */
  async confirm(op: CapOperation, amountMinor: number, floorMinor?: number): Promise<CapConfirmOutcome> {
    const [status] = await this.script("rewardCapConfirm", op, [
      amountMinor,
      op.keysExpireAtS,
      Date.now(),
      floorArgument(floorMinor),
    ]);
    switch (status) {
      case "confirmed":
      case "already_confirmed":
      case "recounted":
      case "noop":
        return { kind: status };
      default:
        throw new CapStoreUnavailableError("malformed", `confirm replied ${status}`);
    }
  }

  /**
   * Raises `userId`'s counter of `day` to at least `floorMinor` (the day's credited total in the ledger), when the
   * counter exists and is below it: the repair after a Redis failover handed back a counter lower than the truth.
   * A missing counter is left alone (the next reserve seeds it from the ledger). Returns whether it
   * was raised and the value it had. Throws {@link CapStoreUnavailableError}.
   */
  async raiseCounter(
    userId: string,
    day: string,
    floorMinor: number,
    keysExpireAtS: number,
  ): Promise<{ raised: boolean; counterMinor: number | null }> {
    const floor = floorArgument(floorMinor);
    const reply = await this.run((client) => client.rewardCapRaise(capCounterKey(userId, day), floor, keysExpireAtS));
    if (!isScriptReply(reply))
      throw new CapStoreUnavailableError("malformed", `raise replied ${JSON.stringify(reply)}`);
    const [status, counted] = reply;
    if (status !== "missing" && status !== "kept" && status !== "raised") {
      throw new CapStoreUnavailableError("malformed", `raise replied ${status}`);
    }
    return { raised: status === "raised", counterMinor: status === "missing" ? null : counted };
  }

  /**
   * Reads `userId`'s counter and operations of `day` (for the audit and tests): the operation keys are found
   * by SCAN, then the counter and every hash are read in one MULTI, so the values are one consistent snapshot
   * (an operation created between the SCAN and the MULTI is missing from the list).
   * Throws {@link CapStoreUnavailableError}; reason "rejected" when the counter is not an integer.
   */
  async readDay(userId: string, day: string): Promise<CapDayState> {
    const counterKey = capCounterKey(userId, day);
    const operationKeys = await this.scanKeys(`${escapeGlob(counterKey)}:op:*`);
    const replies = await this.run(async (client) => {
      const multi = client.multi().get(counterKey);
      for (const key of operationKeys) multi.hgetall(key);
      return await multi.exec();
    });
    if (!replies) throw new CapStoreUnavailableError("malformed", "MULTI was discarded");
    const values = replies.map(([error, value]) => {
      if (error) throw new CapStoreUnavailableError("rejected", error.message, { cause: error });
      return value;
    });
    const rawCounter = values[0];
    if (rawCounter !== null && (typeof rawCounter !== "string" || !/^[0-9]{1,15}$/.test(rawCounter))) {
      throw new CapStoreUnavailableError("rejected", `${counterKey} does not hold a counter`);
    }
    const operations = operationKeys.map((key, index): CapOperationState => {
      const hash = (values[index + 1] ?? {}) as Record<string, string>;
      // "settled": a confirmed reservation written before the rename (cap_field in the scripts).
      const stored = hash.state === "settled" ? "confirmed" : hash.state;
      const state = stored === "reserved" || stored === "confirmed" || stored === "released" ? stored : null;
      return {
        adId: parseCapKey(key)?.adId ?? key,
        state,
        amountMinor: hash.amount !== undefined ? Number(hash.amount) : null,
        holders: Number(hash.holders ?? 0),
        reservedAtMs: hash.at !== undefined ? Number(hash.at) : null,
      };
    });
    return { userId, day, counterMinor: rawCounter === null ? null : Number(rawCounter), operations };
  }

  /**
   * Every (user, day) that has a counter, found by SCAN over `reward:cap:*` (for the audit). Bounded by the
   * keyspace; SCAN may report a key twice, duplicates are removed. Throws {@link CapStoreUnavailableError}.
   */
  async listCounterDays(): Promise<{ userId: string; day: string }[]> {
    const seen = new Map<string, { userId: string; day: string }>();
    for (const key of await this.scanKeys("reward:cap:*")) {
      const parsed = parseCapKey(key);
      if (parsed && parsed.adId === null) seen.set(key, { userId: parsed.userId, day: parsed.day });
    }
    return [...seen.values()];
  }

  /**
   * Every key matching `pattern`. SCAN walks one node's keyspace, so on a Cluster every master is walked (the
   * replicas hold copies of the same keys).
   */
  private async scanKeys(pattern: string): Promise<string[]> {
    const keys = new Set<string>();
    const nodes = await this.run(async (client) => (client instanceof Cluster ? client.nodes("master") : [client]));
    for (const node of nodes) {
      let cursor = "0";
      do {
        const [next, batch] = await this.run(() => node.scan(cursor, "MATCH", pattern, "COUNT", SCAN_COUNT));
        for (const key of batch) keys.add(key);
        cursor = next;
      } while (cursor !== "0");
    }
    return [...keys];
  }
}

/**
 * The floor as the scripts take it: a non-negative safe integer, or -1 for none. Throws {@link
 * CapStoreUnavailableError} "malformed" for anything else, before Redis is touched.
 */
function floorArgument(floorMinor: number | undefined): number {
  if (floorMinor === undefined) return -1;
  if (!Number.isSafeInteger(floorMinor) || floorMinor < 0) {
    throw new CapStoreUnavailableError("malformed", `floor ${floorMinor} is not a non-negative integer`);
  }
  return floorMinor;
}

/** Escapes Redis glob characters so a user id is matched literally by SCAN MATCH. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

const defaultStores = new WeakMap<RedisClient, RedisRewardCapStore>();
let offStore: RedisRewardCapStore | undefined;

/**
 * The process's cap store on the shared client of lib/redis.ts (REDIS_URL). When REDIS_URL is unset, a store
 * whose every operation throws {@link CapStoreUnavailableError} "off" (rewards answer 503).
 */
export function rewardCapStore(): RedisRewardCapStore {
  const client = redis();
  if (!client) {
    offStore ??= new RedisRewardCapStore(null);
    return offStore;
  }
  let store = defaultStores.get(client);
  if (!store) {
    store = new RedisRewardCapStore(client);
    defaultStores.set(client, store);
  }
  return store;
}
