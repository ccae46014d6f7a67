/**
 * Audit check "reward_cap" (contract section 7, invariant 3): for every user and reward day, the rewards
 * credited are at most the daily cap and equal the day's row in `reward_cap_days` (the cap PostgreSQL holds,
 * docs/decisions/016); and, when Redis is reachable, every counter present equals the credited
 * sum plus the reservations still in flight (zero when idle: a reservation held long after any request could
 * still be running is reported as leaked).
 */
import { pool } from "../../db";
import { env } from "../../env";
import type { Queryable } from "../../ledger";
import { CapStoreUnavailableError, rewardCapStore, type RedisRewardCapStore } from "../../rewards/cap-store";
import { AUDIT_VIOLATIONS_MAX, type AuditCheck, type AuditCheckResult } from "../types";

export const REWARD_CAP_CHECK_NAME = "reward_cap";

/**
 * A reservation without a credit older than this is leaked, not in flight. 60 s: a reward request holds its
 * reservation for at most the Redis timeouts (~1 s), the claim transaction (statement timeout 15 s) and the
 * idempotency wait (3 s); anything four times older has lost its release.
 */
export const STALE_RESERVATION_MS = 60_000;

/**
 * Pause before re-reading a user-day whose counter and ledger disagreed, in ms: a reward in flight between the
 * check's Redis read and its ledger read can make them disagree for the few ms its transaction takes; 200 ms
 * lets it finish, so only a lasting difference is reported.
 */
const RECHECK_DELAY_MS = 200;

export interface RewardCapCheckOptions {
  /** Only these users; null or absent: every user (same shape as an audit scope's `userIds`). */
  readonly userIds?: readonly string[] | null;
  /** The cap to hold credited rewards to, minor units. Default REWARD_DAILY_CAP_MINOR. */
  readonly capMinor?: number;
  /** The cap store to compare; default the process's (REDIS_URL). Null: ledger part only. */
  readonly capStore?: RedisRewardCapStore | null;
  /** The ledger connection; default the app's pool. */
  readonly db?: Queryable;
  /** See {@link STALE_RESERVATION_MS}. */
  readonly staleReservationMs?: number;
}

/** The result, with notes on what was not checked (e.g. Redis unreachable). */
export interface RewardCapCheckResult extends AuditCheckResult {
  readonly notes?: string[];
}

// Per user and day (the day is the reward's identity, params.day, not created_at). Bounded one past the
// listing limit so the result can say that more exist.
const OVER_CAP_SQL = `
SELECT user_id, params->>'day' AS day, sum(amount_minor)::text AS credited_minor
  FROM ledger_entries
 WHERE type = 'reward' AND status = 'succeeded' AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
 GROUP BY user_id, params->>'day'
HAVING sum(amount_minor) > $2
 ORDER BY user_id, day
 LIMIT $3`;

// The cap's per-(user, day) row in PostgreSQL (reward_cap_days) must equal the ledger's credited sum:
// both change in the reward's one transaction, so any difference is a bug, never a request in flight.
const DAY_TOTALS_DRIFT_SQL = `
WITH ledger AS (
  SELECT user_id, params->>'day' AS day, sum(amount_minor) AS credited_minor
    FROM ledger_entries
   WHERE type = 'reward' AND status = 'succeeded' AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
   GROUP BY user_id, params->>'day'
), days AS (
  SELECT user_id, day, credited_minor FROM reward_cap_days WHERE ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
)
SELECT coalesce(ledger.user_id, days.user_id) AS user_id, coalesce(ledger.day, days.day) AS day,
       coalesce(ledger.credited_minor, 0)::text AS ledger_minor, coalesce(days.credited_minor, 0)::text AS row_minor
  FROM ledger FULL JOIN days ON days.user_id = ledger.user_id AND days.day = ledger.day
 WHERE coalesce(ledger.credited_minor, 0) <> coalesce(days.credited_minor, 0)
 ORDER BY 1, 2
 LIMIT $2`;

const DAY_ROWS_SQL = `
SELECT params->>'adId' AS ad_id, status, amount_minor::text AS amount_minor
  FROM ledger_entries
 WHERE user_id = $1 AND type = 'reward' AND params->>'day' = $2`;

/** The check, typed with its notes. */
export interface RewardCapAuditCheck extends AuditCheck {
  run(): Promise<RewardCapCheckResult>;
}

/**
 * Builds the "reward_cap" check. `run()` returns `{ name, ok, violations, notes? }`; it throws only when the
 * ledger cannot be read. Redis being off or unreachable is not a violation (the counters are then not
 * compared, and a note says so); garbage at a counter key is.
 */
export function createRewardCapCheck(options: RewardCapCheckOptions = {}): RewardCapAuditCheck {
  return {
    name: REWARD_CAP_CHECK_NAME,
    async run(): Promise<RewardCapCheckResult> {
      const db = options.db ?? pool();
      const capMinor = options.capMinor ?? env().REWARD_DAILY_CAP_MINOR;
      const userIds = options.userIds ?? null;
      const violations: string[] = [];
      const notes: string[] = [];

      const overCap = await db.query<{ user_id: string; day: string; credited_minor: string }>(OVER_CAP_SQL, [
        userIds ? [...userIds] : null,
        capMinor,
        AUDIT_VIOLATIONS_MAX + 1,
      ]);
      for (const row of overCap.rows) {
        violations.push(
          `user ${row.user_id} day ${row.day}: rewards credited ${row.credited_minor} exceed the daily cap ${capMinor}`,
        );
      }

      const drift = await db.query<{ user_id: string; day: string; ledger_minor: string; row_minor: string }>(
        DAY_TOTALS_DRIFT_SQL,
        [userIds ? [...userIds] : null, AUDIT_VIOLATIONS_MAX + 1],
      );
      for (const row of drift.rows) {
        violations.push(
          `user ${row.user_id} day ${row.day}: reward_cap_days says ${row.row_minor} credited, the ledger ${row.ledger_minor}`,
        );
      }

      const store = options.capStore === undefined ? rewardCapStore() : options.capStore;
      if (!store) {
        notes.push("Redis counters not compared: no cap store");
      } else {
        await compareCounters(
          store,
          db,
          userIds,
          options.staleReservationMs ?? STALE_RESERVATION_MS,
          violations,
          notes,
        );
      }
      return result(violations, notes);
    },
  };
}

/** The check with every default (the whole ledger, REDIS_URL's counters), for the audit's list of checks. */
export const rewardCapCheck: AuditCheck = createRewardCapCheck();

async function compareCounters(
  store: RedisRewardCapStore,
  db: Queryable,
  userIds: readonly string[] | null,
  staleMs: number,
  violations: string[],
  notes: string[],
): Promise<void> {
  let days: { userId: string; day: string }[];
  try {
    days = await store.listCounterDays();
  } catch (error) {
    if (!(error instanceof CapStoreUnavailableError)) throw error;
    notes.push(`Redis counters not compared: ${error.message}`);
    return;
  }
  const wanted = userIds ? new Set(userIds) : null;
  for (const { userId, day } of days) {
    if (wanted && !wanted.has(userId)) continue;
    if (violations.length > AUDIT_VIOLATIONS_MAX) return;
    let found = await compareDay(store, db, userId, day, staleMs);
    if (found.mismatch) {
      await new Promise((resolve) => setTimeout(resolve, RECHECK_DELAY_MS));
      found = await compareDay(store, db, userId, day, staleMs);
    }
    violations.push(...found.violations);
  }
}

/** Compares one counter with the ledger; `mismatch` says whether the difference may be a request in flight. */
async function compareDay(
  store: RedisRewardCapStore,
  db: Queryable,
  userId: string,
  day: string,
  staleMs: number,
): Promise<{ violations: string[]; mismatch: boolean }> {
  let state;
  try {
    state = await store.readDay(userId, day);
  } catch (error) {
    if (error instanceof CapStoreUnavailableError && error.reason === "rejected") {
      return {
        violations: [`user ${userId} day ${day}: the counter holds garbage (${error.message})`],
        mismatch: false,
      };
    }
    if (error instanceof CapStoreUnavailableError) return { violations: [], mismatch: false };
    throw error;
  }
  // Read after Redis: a credit that lands in between is in both (its reservation is in the counter).
  const rows = await db.query<{ ad_id: string; status: string; amount_minor: string }>(DAY_ROWS_SQL, [userId, day]);
  if (state.counterMinor === null) return { violations: [], mismatch: false };

  const succeeded = new Set<string>();
  let creditedMinor = 0;
  for (const row of rows.rows) {
    if (row.status !== "succeeded") continue;
    succeeded.add(row.ad_id);
    creditedMinor += Number(row.amount_minor);
  }
  const nowMs = Date.now();
  let inFlightMinor = 0;
  const violations: string[] = [];
  for (const operation of state.operations) {
    // A reservation whose credit landed but was never confirmed (a crash between commit and confirm) is
    // already in the credited sum; only the others are in flight.
    if (operation.state !== "reserved" || succeeded.has(operation.adId)) continue;
    inFlightMinor += operation.amountMinor ?? 0;
    const ageMs = operation.reservedAtMs === null ? null : nowMs - operation.reservedAtMs;
    if (ageMs !== null && ageMs > staleMs) {
      violations.push(
        `user ${userId} day ${day}: reservation of ad ${operation.adId} (${operation.amountMinor}) held ${Math.round(ageMs / 1000)} s without a credit (leaked)`,
      );
    }
  }
  const expectedMinor = creditedMinor + inFlightMinor;
  if (state.counterMinor !== expectedMinor) {
    violations.push(
      `user ${userId} day ${day}: counter ${state.counterMinor} differs from credited ${creditedMinor} + in flight ${inFlightMinor}`,
    );
    return { violations, mismatch: true };
  }
  return { violations, mismatch: false };
}

function result(violations: string[], notes: string[]): RewardCapCheckResult {
  // The ledger query and the counter loop stop one past the limit, so the exact total is not known here.
  const listed =
    violations.length > AUDIT_VIOLATIONS_MAX
      ? [...violations.slice(0, AUDIT_VIOLATIONS_MAX - 1), "... and more not listed"]
      : violations;
  const base = { name: REWARD_CAP_CHECK_NAME, ok: violations.length === 0, violations: listed };
  return notes.length > 0 ? { ...base, notes } : base;
}
