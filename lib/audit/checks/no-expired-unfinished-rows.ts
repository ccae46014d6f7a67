/**
 * Contract section 7.5: after a reconciler pass no row is `initiated`/`processing` with an expired lease, unless
 * the bank is unreachable (then the rows are reported, not dropped). When such rows exist and the bank does not
 * answer, the invariant's exception applies: the check holds and lists the rows as notes (the charge check fails
 * on its own for the unreachable bank, so the audit as a whole still says something is wrong).
 */
import { pool } from "../../db";
import { AUDIT_VIOLATIONS_MAX, type AuditCheck } from "../types";
import { bankUnreachableReason } from "./read-bank-charges";
import { checkResult, WHOLE_LEDGER, type AuditBankOptions, type AuditScope } from "./scope";

export const EXPIRED_LEASES_CHECK_NAME = "no_expired_unfinished_rows";

// Uses the partial index ledger_entries_unfinished_idx. $1 user ids or null, $2 limit.
const EXPIRED_SQL = `
SELECT user_id, type, ref_id, status, lease_owner, lease_expires_at, attempt, count(*) OVER ()::int AS total
  FROM ledger_entries
 WHERE status IN ('initiated', 'processing')
   AND lease_expires_at < now()
   AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
 ORDER BY lease_expires_at
 LIMIT $2`;

/** The expired-lease check (7.5) over `scope`. Throws only when the database cannot be queried. */
export function createNoExpiredUnfinishedRowsCheck(
  bank: AuditBankOptions,
  scope: AuditScope = WHOLE_LEDGER,
): AuditCheck {
  return {
    name: EXPIRED_LEASES_CHECK_NAME,
    async run() {
      const result = await pool().query<{
        user_id: string;
        type: string;
        ref_id: string;
        status: string;
        lease_owner: string | null;
        lease_expires_at: Date;
        attempt: number;
        total: number;
      }>(EXPIRED_SQL, [scope.userIds, AUDIT_VIOLATIONS_MAX]);
      if (result.rows.length === 0) return checkResult(EXPIRED_LEASES_CHECK_NAME, []);
      const total = result.rows[0]?.total ?? result.rows.length;
      const lines = result.rows.map(
        (row) =>
          `${row.type} ${row.ref_id} of user ${row.user_id} is ${row.status}; lease of ${row.lease_owner ?? "nobody"} (attempt ${row.attempt}) expired at ${row.lease_expires_at.toISOString()}`,
      );
      const unreachable = await bankUnreachableReason(bank);
      if (unreachable !== null) {
        return checkResult(EXPIRED_LEASES_CHECK_NAME, [], 0, [
          `bank unreachable (${unreachable}): ${total} unfinished row(s) with an expired lease are left for the reconciler (contract 7.5)`,
          ...lines,
        ]);
      }
      return checkResult(EXPIRED_LEASES_CHECK_NAME, lines, total);
    },
  };
}
