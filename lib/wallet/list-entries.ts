import { pool } from "../db";
import { ENTRY_COLUMNS, statementEntryView, toLedgerEntry, type StatementEntryView } from "../ledger";
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from "../topups/list-topups";

/**
 * The caller's statement (contract section 4: `GET /api/v1/entries`): every movement (top-ups, rewards,
 * payments) in every status, newest first, at most `limit` (1..100, default 50).
 */
export async function listEntries(userId: string, options: { limit?: number } = {}): Promise<StatementEntryView[]> {
  const limit = Math.min(Math.max(options.limit ?? LIST_LIMIT_DEFAULT, 1), LIST_LIMIT_MAX);
  const result = await pool().query(
    `SELECT ${ENTRY_COLUMNS} FROM ledger_entries WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
    [userId, limit],
  );
  return result.rows.map((row) => statementEntryView(toLedgerEntry(row)));
}
