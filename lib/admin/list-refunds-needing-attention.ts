import { pool } from "../db";
import { type EntryStatus, entryColumns, toLedgerEntry } from "../ledger";
import { STUCK_AGE_MS } from "./stuck";

/** A refund a person should look at, for the admin page's "needs attention" (contract sections 5 and 11). */
export interface RefundNeedingAttention {
  readonly userId: string;
  readonly userEmail: string;
  readonly refundId: string;
  /** The refunded top-up's ref id: its timeline page lists the refund. */
  readonly topupRefId: string;
  /** Minor units of `currency`. */
  readonly amount: number;
  readonly currency: string;
  readonly status: EntryStatus;
  /** ISO-8601 UTC. */
  readonly createdAt: string;
  /** Failed attempts to settle it from the bank's word (case C28). */
  readonly settleFailures: number;
  readonly settleLastError: string | null;
  /** When the failures reached SETTLE_ATTEMPTS_MAX, ISO-8601 UTC; null while it is only stuck. */
  readonly settleFlaggedAt: string | null;
}

// Unfinished refunds that are flagged, or stuck as lib/admin/stuck.ts defines it for top-ups (lease expired, or older
// than STUCK_AGE_MS), through the partial index of unfinished rows (ledger_entries_unfinished_idx, lease_expires_at)
// and the flagged rows' index: both hold few rows. Flagged first, then oldest first. $1 stuck age ms, $2 limit.
const REFUNDS_NEEDING_ATTENTION_SQL = `
SELECT ${entryColumns("e")}, u.email AS user_email, t.ref_id AS topup_ref_id
  FROM ledger_entries e
  JOIN "user" u ON u.id = e.user_id
  JOIN ledger_entries t ON t.user_id = e.user_id AND t.id = e.refunds_entry_id
 WHERE e.type = 'refund'
   AND e.status IN ('initiated', 'processing')
   AND (e.settle_flagged_at IS NOT NULL OR e.lease_expires_at < now()
        OR e.created_at < now() - $1::int * interval '1 millisecond')
 ORDER BY e.settle_flagged_at DESC NULLS LAST, e.created_at
 LIMIT $2`;

/**
 * The unfinished refunds that need a person (contract sections 5 and 11; case C28): flagged after SETTLE_ATTEMPTS_MAX
 * failed settlements (a give-back the database keeps refusing), or stuck (lease expired, or unfinished for more than
 * {@link STUCK_AGE_MS}); flagged first, at most `limit` (1..100). Throws database errors.
 */
export async function listRefundsNeedingAttention(limit: number): Promise<RefundNeedingAttention[]> {
  const result = await pool().query(REFUNDS_NEEDING_ATTENTION_SQL, [
    STUCK_AGE_MS,
    Math.min(Math.max(Math.trunc(limit), 1), 100),
  ]);
  return result.rows.map((row) => {
    const entry = toLedgerEntry(row);
    return {
      userId: entry.userId,
      userEmail: row.user_email as string,
      refundId: entry.refId,
      topupRefId: row.topup_ref_id as string,
      amount: entry.amountMinor,
      currency: entry.currency,
      status: entry.status,
      createdAt: entry.createdAt.toISOString(),
      settleFailures: entry.settleFailures,
      settleLastError: entry.settleLastError,
      settleFlaggedAt: entry.settleFlaggedAt?.toISOString() ?? null,
    };
  });
}
