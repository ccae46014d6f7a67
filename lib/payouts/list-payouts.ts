/**
 * The wallet page's withdrawals: the user's most recent payouts, newest first (contract section 14; the amount their
 * unfinished ones hold is the wallet's `held`, lib/wallet/get-wallet.ts). Read-only.
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

/**
 * The `limit` (1..{@link RECENT_PAYOUTS_MAX}, default 5) newest payouts of `userId` (from the session), newest first.
 * Throws database errors.
 */
export async function listRecentPayouts(userId: string, limit = 5): Promise<readonly PayoutView[]> {
  const bounded = Math.min(Math.max(Math.trunc(limit), 1), RECENT_PAYOUTS_MAX);
  const recent = await pool().query(prepared("payouts_recent", RECENT_SQL, [userId, bounded]));
  return recent.rows.map((row) => payoutView(toLedgerEntry(row)));
}
