/**
 * The reward cap in PostgreSQL: one row per (user, reward day) in `reward_cap_days` holds what
 * the ledger credited in rewards that day, raised in the reward's own transaction by a conditional upsert that
 * refuses to pass the cap. Redis stays the fast reservation in front (contract section 6); this row is what holds
 * the cap when Redis hands back a counter lower than the truth (a promoted lagging replica lost acknowledged
 * increments: docs/development.md note 28 measured 49).
 */
import { type Queryable, prepared } from "../ledger";

export type RewardDayCreditOutcome =
  /** The day's row now counts this credit; `creditedMinor` is the day's total including it. */
  | { readonly kind: "raised"; readonly creditedMinor: number }
  /** The credit would take the day past the cap; nothing changed. `creditedMinor` is the day's total as it is. */
  | { readonly kind: "over_cap"; readonly creditedMinor: number };

// The race is decided here, by PostgreSQL, not by a SUM that two concurrent credits could both pass: the first
// credit of a day inserts the row; every later one (or a concurrent first one, which waits on the conflict)
// updates it under its row lock, and READ COMMITTED re-evaluates the WHERE against the latest committed total
// after the wait. No row back means the cap would be passed: the caller rolls the whole transaction back.
// $1 user_id, $2 day (YYYY-MM-DD), $3 amount (minor units), $4 cap (minor units).
const RAISE_SQL = `
INSERT INTO reward_cap_days AS d (user_id, day, credited_minor)
SELECT $1, $2, $3::bigint WHERE $3::bigint <= $4::bigint
ON CONFLICT (user_id, day) DO UPDATE
   SET credited_minor = d.credited_minor + EXCLUDED.credited_minor, updated_at = now()
 WHERE d.credited_minor + EXCLUDED.credited_minor <= $4::bigint
RETURNING credited_minor`;

const READ_SQL = `SELECT credited_minor FROM reward_cap_days WHERE user_id = $1 AND day = $2`;

/**
 * Counts a reward credit of `amountMinor` against `userId`'s day `day` (`YYYY-MM-DD` in REWARD_TZ), if the day's
 * total stays at or below `capMinor`. Run it on the transaction (`db`) that claims and credits the reward, before
 * the credit, so that a refusal rolls the claim back with it (contract section 3: a 429 creates no row).
 *
 * Returns `raised` with the new total, or `over_cap` with the current total (read in the same transaction).
 * Throws database errors as they come.
 */
export async function raiseRewardDayCredit(
  db: Queryable,
  input: { readonly userId: string; readonly day: string; readonly amountMinor: number; readonly capMinor: number },
): Promise<RewardDayCreditOutcome> {
  const raised = await db.query<{ credited_minor: number }>(
    prepared("reward_cap_day_raise", RAISE_SQL, [input.userId, input.day, input.amountMinor, input.capMinor]),
  );
  const row = raised.rows[0];
  if (row) return { kind: "raised", creditedMinor: row.credited_minor };
  const current = await db.query<{ credited_minor: number }>(
    prepared("reward_cap_day_read", READ_SQL, [input.userId, input.day]),
  );
  return { kind: "over_cap", creditedMinor: current.rows[0]?.credited_minor ?? 0 };
}

/**
 * The day's credited total of `userId` from its `reward_cap_days` row, in minor units (0 without a row), read in
 * its own statement. For a request that did not run the credit itself (a duplicate that lost the claim, or a
 * commit whose answer was lost) and must still settle with the ledger's total. Throws database errors.
 */
export async function readRewardDayCredited(userId: string, day: string, db: Queryable): Promise<number> {
  const current = await db.query<{ credited_minor: number }>(prepared("reward_cap_day_read", READ_SQL, [userId, day]));
  return current.rows[0]?.credited_minor ?? 0;
}
