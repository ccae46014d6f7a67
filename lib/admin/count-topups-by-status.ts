import { pool } from "../db";
import type { EntryStatus } from "../ledger";

/** Top-ups per status, plus how many unfinished ones have an expired lease (what the reconciler takes over). */
export interface TopupCounts {
  byStatus: Record<EntryStatus, number>;
  /** Unfinished rows whose lease has expired. */
  leaseExpired: number;
  total: number;
}

const COUNTS_SQL = `
SELECT status, count(*)::int AS n,
       count(*) FILTER (WHERE status IN ('initiated', 'processing') AND lease_expires_at < now())::int AS expired
  FROM ledger_entries
 WHERE type = 'topup'
 GROUP BY status`;

/**
 * Counts every user's top-ups by status for the admin page (one aggregate over the top-ups; the admin page is
 * rare traffic). Returns zeros for statuses with no rows. Throws database errors.
 */
export async function countTopupsByStatus(): Promise<TopupCounts> {
  const result = await pool().query<{ status: EntryStatus; n: number; expired: number }>(COUNTS_SQL);
  const byStatus: Record<EntryStatus, number> = { initiated: 0, processing: 0, succeeded: 0, failed: 0 };
  let leaseExpired = 0;
  for (const row of result.rows) {
    byStatus[row.status] = row.n;
    leaseExpired += row.expired;
  }
  const total = Object.values(byStatus).reduce((sum, n) => sum + n, 0);
  return { byStatus, leaseExpired, total };
}
