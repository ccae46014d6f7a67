import { pool } from "../db";
import { ENTRY_COLUMNS, toLedgerEntry, topupView, type EntryStatus, type LedgerEntry, type TopupView } from "../ledger";
import { boundedLimit, keysetAfter, pageOf, type PageResult } from "../pagination/cursor";

const LIST_TOPUPS_SQL = `
SELECT ${ENTRY_COLUMNS} FROM ledger_entries
 WHERE user_id = $1 AND type = 'topup' AND ($2::text IS NULL OR status = $2)
   AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::bigint))
 ORDER BY created_at DESC, id DESC
 LIMIT $5`;

/**
 * One page of the caller's top-ups (contract section 4: `GET /api/v1/topups?status=&limit=&cursor=`), newest first
 * by `(created_at, id)`, optionally only those in `status`; at most `limit` (1..100, default 50) after the position
 * of `cursor` (see lib/pagination/cursor.ts). Served by the (user_id, created_at DESC, id DESC) index.
 *
 * Returns the page and its `nextCursor` (null on the last page), or `ok: false` with a 400 detail when the cursor
 * is malformed or belongs to another list, user or status filter. Throws database errors.
 */
export async function listTopups(
  userId: string,
  options: { status?: EntryStatus; limit?: number; cursor?: string } = {},
): Promise<PageResult<TopupView>> {
  const limit = boundedLimit(options.limit);
  const scope = `user:${userId}|status:${options.status ?? "*"}`;
  const after = keysetAfter(options.cursor, "topups", scope);
  if (!after.ok) return after;
  const result = await pool().query(LIST_TOPUPS_SQL, [userId, options.status ?? null, ...after.params, limit + 1]);
  const entries = result.rows.map(toLedgerEntry);
  return { ok: true, ...pageOf(entries, limit, "topups", scope, positionOf, topupView) };
}

/** Where a ledger row sits in list order. */
export function positionOf(entry: LedgerEntry): { createdAt: Date; id: number } {
  return { createdAt: entry.createdAt, id: entry.id };
}
