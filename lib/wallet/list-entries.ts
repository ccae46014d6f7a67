import { pool } from "../db";
import { ENTRY_COLUMNS, statementEntryView, toLedgerEntry, type StatementEntryView } from "../ledger";
import { boundedLimit, keysetAfter, pageOf, type PageResult } from "../pagination/cursor";
import { positionOf } from "../topups/list-topups";

const LIST_ENTRIES_SQL = `
SELECT ${ENTRY_COLUMNS} FROM ledger_entries
 WHERE user_id = $1
   AND ($2::timestamptz IS NULL OR (created_at, id) < ($2::timestamptz, $3::bigint))
 ORDER BY created_at DESC, id DESC
 LIMIT $4`;

/**
 * One page of the caller's statement (contract section 4: `GET /api/v1/entries?limit=&cursor=`): every movement
 * (top-ups, rewards, payments) in every status, newest first by `(created_at, id)`, at most `limit` (1..100,
 * default 50) after the position of `cursor` (lib/pagination/cursor.ts).
 *
 * Returns the page and its `nextCursor` (null on the last page), or `ok: false` with a 400 detail for a malformed
 * or foreign cursor. Throws database errors.
 */
export async function listEntries(
  userId: string,
  options: { limit?: number; cursor?: string } = {},
): Promise<PageResult<StatementEntryView>> {
  const limit = boundedLimit(options.limit);
  const scope = `user:${userId}`;
  const after = keysetAfter(options.cursor, "entries", scope);
  if (!after.ok) return after;
  const result = await pool().query(LIST_ENTRIES_SQL, [userId, ...after.params, limit + 1]);
  const entries = result.rows.map(toLedgerEntry);
  return { ok: true, ...pageOf(entries, limit, "entries", scope, positionOf, statementEntryView) };
}
