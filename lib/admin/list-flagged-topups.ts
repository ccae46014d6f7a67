import { pool } from "../db";
import { entryColumns, toLedgerEntry } from "../ledger";
import { type AdminTopupView, adminTopupView } from "./list-admin-topups";

/** A flagged top-up for the admin page: its view plus why it was flagged. */
export type FlaggedTopupView = AdminTopupView & {
  /** Failed attempts to settle it (contract section 5). */
  readonly settleFailures: number;
  /** The last failure, described for admins. */
  readonly settleLastError: string | null;
  /** When the failures reached SETTLE_ATTEMPTS_MAX, ISO-8601 UTC. */
  readonly settleFlaggedAt: string;
};

// The partial index ledger_entries_settle_flagged_idx holds exactly the flagged rows. Rows that reached a final
// state since they were flagged no longer need a person. Flagged refunds have their own list
// (./list-refunds-needing-attention.ts). $1 limit.
const FLAGGED_SQL = `
SELECT ${entryColumns("e")}, u.email AS user_email
  FROM ledger_entries e JOIN "user" u ON u.id = e.user_id
 WHERE e.settle_flagged_at IS NOT NULL
   AND e.type = 'topup'
   AND e.status IN ('initiated', 'processing')
 ORDER BY e.settle_flagged_at DESC
 LIMIT $1`;

/**
 * The unfinished top-ups whose settlement kept failing until they were flagged (contract section 5,
 * SETTLE_ATTEMPTS_MAX; docs/decisions/008), most recently flagged first, at most `limit` (1..100), for the top of
 * the admin page. Throws database errors.
 */
export async function listFlaggedTopups(limit: number): Promise<FlaggedTopupView[]> {
  const result = await pool().query(FLAGGED_SQL, [Math.min(Math.max(Math.trunc(limit), 1), 100)]);
  return result.rows.map((row) => {
    const entry = toLedgerEntry(row);
    return {
      ...adminTopupView(entry, row.user_email as string),
      settleFailures: entry.settleFailures,
      settleLastError: entry.settleLastError,
      settleFlaggedAt: (entry.settleFlaggedAt ?? entry.updatedAt).toISOString(),
    };
  });
}
