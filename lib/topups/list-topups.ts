import { pool } from "../db";
import { ENTRY_COLUMNS, toLedgerEntry, topupView, type EntryStatus, type TopupView } from "../ledger";

/** Contract section 4: `limit` defaults to 50 and is at most 100. */
export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 100;

/**
 * The caller's top-ups, newest first, optionally only those in `status`; at most `limit` (1..100).
 * Served by the (user_id, created_at DESC, id DESC) index.
 */
export async function listTopups(
  userId: string,
  options: { status?: EntryStatus; limit?: number } = {},
): Promise<TopupView[]> {
  const limit = Math.min(Math.max(options.limit ?? LIST_LIMIT_DEFAULT, 1), LIST_LIMIT_MAX);
  const result = await pool().query(
    `SELECT ${ENTRY_COLUMNS} FROM ledger_entries
      WHERE user_id = $1 AND type = 'topup' AND ($2::text IS NULL OR status = $2)
      ORDER BY created_at DESC, id DESC LIMIT $3`,
    [userId, options.status ?? null, limit],
  );
  return result.rows.map((row) => topupView(toLedgerEntry(row)));
}
