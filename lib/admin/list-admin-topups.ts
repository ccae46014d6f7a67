import { pool } from "../db";
import { ENTRY_COLUMNS, toLedgerEntry, topupView, type EntryStatus, type LedgerEntry, type TopupView } from "../ledger";
import { LIST_LIMIT_MAX } from "../topups/list-topups";

export interface AdminTopupView extends TopupView {
  userId: string;
  chargeId: string | null;
  leaseExpiresAt: string | null;
  leaseOwner: string | null;
  attempt: number;
}

/**
 * Every user's top-ups for admins (contract section 4: `GET /api/v1/admin/topups?status=&stuck=1`), newest
 * first. `stuck` keeps unfinished rows whose lease has expired (what the reconciler will take over).
 * At most `limit` rows (1..100).
 */
export async function listAdminTopups(options: { status?: EntryStatus; stuck?: boolean; limit?: number } = {}): Promise<AdminTopupView[]> {
  const limit = Math.min(Math.max(options.limit ?? LIST_LIMIT_MAX, 1), LIST_LIMIT_MAX);
  const result = await pool().query(
    `SELECT ${ENTRY_COLUMNS} FROM ledger_entries
      WHERE type = 'topup'
        AND ($1::text IS NULL OR status = $1)
        AND (NOT $2::boolean OR (status IN ('initiated', 'processing') AND lease_expires_at < now()))
      ORDER BY created_at DESC, id DESC LIMIT $3`,
    [options.status ?? null, options.stuck ?? false, limit],
  );
  return result.rows.map((row) => adminTopupView(toLedgerEntry(row)));
}

/** The admin's view of a top-up row: `T` plus owner, charge and lease fields (contract section 4). */
export function adminTopupView(entry: LedgerEntry): AdminTopupView {
  return {
    ...topupView(entry),
    userId: entry.userId,
    chargeId: entry.bankChargeId,
    leaseExpiresAt: entry.leaseExpiresAt?.toISOString() ?? null,
    leaseOwner: entry.leaseOwner,
    attempt: entry.attempt,
  };
}
