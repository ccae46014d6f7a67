import { pool } from "../db";
import { entryColumns, toLedgerEntry } from "../ledger";
import { LIST_LIMIT_MAX } from "../topups/list-topups";
import { adminTopupView, type AdminTopupView } from "./list-admin-topups";
import { STUCK_AGE_MS } from "./stuck";

// The partial index ledger_entries_unfinished_idx holds exactly the unfinished rows, so this never scans
// finished ones. $1 stuck age in ms, $2 limit.
const STUCK_SQL = `
SELECT ${entryColumns("e")}, u.email AS user_email
  FROM ledger_entries e JOIN "user" u ON u.id = e.user_id
 WHERE e.status IN ('initiated', 'processing')
   AND e.type = 'topup'
   AND (e.lease_expires_at < now() OR e.created_at < now() - $1::int * interval '1 millisecond')
 ORDER BY e.created_at DESC, e.id DESC
 LIMIT $2`;

/**
 * Every user's stuck top-ups (see ./stuck.ts: unfinished with an expired lease, or unfinished for longer than
 * {@link STUCK_AGE_MS}), newest first, at most `limit` (1..100). Throws database errors.
 */
export async function listStuckTopups(limit: number = LIST_LIMIT_MAX): Promise<AdminTopupView[]> {
  const bounded = Math.min(Math.max(Math.trunc(limit), 1), LIST_LIMIT_MAX);
  const result = await pool().query(STUCK_SQL, [STUCK_AGE_MS, bounded]);
  return result.rows.map((row) => adminTopupView(toLedgerEntry(row), row.user_email as string));
}
