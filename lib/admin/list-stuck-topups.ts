import { pool } from "../db";
import { entryColumns, type EntryStatus } from "../ledger";
import { boundedLimit, keysetAfter, type PageResult } from "../pagination/cursor";
import { adminTopupPage, type AdminTopupView, userScope } from "./list-admin-topups";
import { STUCK_AGE_MS } from "./stuck";

// The partial index ledger_entries_unfinished_idx holds exactly the unfinished rows, so this never scans
// finished ones. $1 stuck age in ms, $2 status filter, $3/$4 keyset position, $5 limit + 1, $6 user's email.
const STUCK_SQL = `
SELECT ${entryColumns("e")}, u.email AS user_email
  FROM ledger_entries e JOIN "user" u ON u.id = e.user_id
 WHERE e.status IN ('initiated', 'processing')
   AND e.type = 'topup'
   AND (e.lease_expires_at < now() OR e.created_at < now() - $1::int * interval '1 millisecond')
   AND ($2::text IS NULL OR e.status = $2)
   AND ($3::timestamptz IS NULL OR (e.created_at, e.id) < ($3::timestamptz, $4::bigint))
   AND ($6::text IS NULL OR u.email = $6)
 ORDER BY e.created_at DESC, e.id DESC
 LIMIT $5`;

/**
 * One page of every user's stuck top-ups for the admin page (see ./stuck.ts: unfinished with an expired lease, or
 * unfinished for longer than {@link STUCK_AGE_MS}), optionally only those in `status` or of one user (`userEmail`,
 * lowercased as stored), newest first by
 * `(created_at, id)`, at most `limit` (1..100, default 50) after the position of `cursor`.
 * Returns the page and its `nextCursor`, or `ok: false` with a detail for a malformed or foreign cursor.
 * Throws database errors.
 */
export async function listStuckTopups(
  options: { status?: EntryStatus; userEmail?: string; limit?: number; cursor?: string } = {},
): Promise<PageResult<AdminTopupView>> {
  const limit = boundedLimit(options.limit);
  const scope = `status:${options.status ?? "*"}${userScope(options.userEmail)}`;
  const after = keysetAfter(options.cursor, "admin-stuck-topups", scope);
  if (!after.ok) return after;
  const result = await pool().query(STUCK_SQL, [
    STUCK_AGE_MS,
    options.status ?? null,
    ...after.params,
    limit + 1,
    options.userEmail ?? null,
  ]);
  return { ok: true, ...adminTopupPage(result.rows, limit, "admin-stuck-topups", scope) };
}

const COUNT_STUCK_SQL = `
SELECT count(*)::int AS n FROM ledger_entries e
 WHERE e.status IN ('initiated', 'processing')
   AND e.type = 'topup'
   AND (e.lease_expires_at < now() OR e.created_at < now() - $1::int * interval '1 millisecond')`;

/** How many top-ups are stuck now (the same rule as {@link listStuckTopups}), for the metrics. Throws database errors. */
export async function countStuckTopups(): Promise<number> {
  const result = await pool().query<{ n: number }>(COUNT_STUCK_SQL, [STUCK_AGE_MS]);
  return result.rows[0]?.n ?? 0;
}
