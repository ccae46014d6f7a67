/**
 * The wallet page's withdrawals: the user's most recent payouts, newest first, and the amount held for the unfinished
 * ones (contract section 14: a payout's money is held from its claim until the bank pays or fails it). Read-only.
 */
import { pool } from "../db";
import { ENTRY_COLUMNS, payoutView, prepared, toLedgerEntry, type PayoutView } from "../ledger";

/** At most this many payouts are read: the page shows a short list; the history shows every movement. */
export const RECENT_PAYOUTS_MAX = 20;

/** The newest payouts, served by the (user_id, created_at DESC, id DESC) index. */
const RECENT_SQL = `
SELECT ${ENTRY_COLUMNS} FROM ledger_entries
 WHERE user_id = $1 AND type = 'payout'
 ORDER BY created_at DESC, id DESC
 LIMIT $2`;

/** What the unfinished payouts hold, served by the partial index of unfinished give-backs. */
const HELD_SQL = `
SELECT COALESCE(SUM(amount_minor), 0)::text AS held
  FROM ledger_entries
 WHERE user_id = $1 AND type = 'payout' AND status IN ('initiated', 'processing')`;

export interface RecentPayouts {
  /** The newest payouts first, at most `limit`. */
  readonly payouts: readonly PayoutView[];
  /** The sum of the user's unfinished payouts (all of them, not only those listed), in minor units. */
  readonly heldMinor: number;
}

/**
 * The `limit` (1..{@link RECENT_PAYOUTS_MAX}, default 5) newest payouts of `userId` (from the session) and the amount
 * held for their unfinished payouts. Two reads; a payout settling between them may show in one state and count in
 * the other, which the next render (announced by the live feed) corrects. Throws database errors.
 */
export async function listRecentPayouts(userId: string, limit = 5): Promise<RecentPayouts> {
  const bounded = Math.min(Math.max(Math.trunc(limit), 1), RECENT_PAYOUTS_MAX);
  const db = pool();
  const [recent, held] = await Promise.all([
    db.query(prepared("payouts_recent", RECENT_SQL, [userId, bounded])),
    db.query<{ held: string }>(prepared("payouts_held", HELD_SQL, [userId])),
  ]);
  return {
    payouts: recent.rows.map((row) => payoutView(toLedgerEntry(row))),
    // amount_minor is CHECKed below 2^53 and a user's unfinished payouts are bounded by the balance they held.
    heldMinor: Number(held.rows[0]?.held ?? "0"),
  };
}
