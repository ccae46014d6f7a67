import { pool } from "../db";
import { entryColumns, toLedgerEntry, topupView, type EntryStatus, type LedgerEntry, type TopupView } from "../ledger";
import { LIST_LIMIT_MAX } from "../topups/list-topups";

export interface AdminTopupView extends TopupView {
  userId: string;
  userEmail: string;
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
export async function listAdminTopups(
  options: { status?: EntryStatus; stuck?: boolean; limit?: number } = {},
): Promise<AdminTopupView[]> {
  const limit = Math.min(Math.max(options.limit ?? LIST_LIMIT_MAX, 1), LIST_LIMIT_MAX);
  const result = await pool().query(
    `SELECT ${entryColumns("e")}, u.email AS user_email
       FROM ledger_entries e JOIN "user" u ON u.id = e.user_id
      WHERE e.type = 'topup'
        AND ($1::text IS NULL OR e.status = $1)
        AND (NOT $2::boolean OR (e.status IN ('initiated', 'processing') AND e.lease_expires_at < now()))
      ORDER BY e.created_at DESC, e.id DESC LIMIT $3`,
    [options.status ?? null, options.stuck ?? false, limit],
  );
  return result.rows.map((row) => adminTopupView(toLedgerEntry(row), row.user_email as string));
}

/** The admin's view of a top-up row: `T` plus owner, charge and lease fields (contract section 4). */
export function adminTopupView(entry: LedgerEntry, userEmail: string): AdminTopupView {
  return {
    ...topupView(entry),
    userId: entry.userId,
    userEmail,
    chargeId: entry.bankChargeId,
    leaseExpiresAt: entry.leaseExpiresAt?.toISOString() ?? null,
    leaseOwner: entry.leaseOwner,
    attempt: entry.attempt,
  };
}
