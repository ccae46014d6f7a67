import { pool } from "../db";
import {
  entryColumns,
  type EntryStatus,
  type LedgerEntry,
  payoutView,
  type PayoutView,
  toLedgerEntry,
} from "../ledger";
import { boundedLimit, keysetAfter, pageOf, type PageResult } from "../pagination/cursor";

/** The admin's view of a payout (contract section 14): the API's view, its owner, the bank's payout id and its state. */
export type AdminPayoutView = PayoutView & {
  userId: string;
  userEmail: string;
  /** The bank's payout id (`po_…`), once the bank answered with it. */
  payoutId: string | null;
  /** While unfinished: until when its worker holds it (after that, the reconciler asks the bank again). */
  leaseExpiresAt: string | null;
  /** When repeated settlement failures flagged it for a person, ISO-8601 UTC; null when never flagged. */
  settleFlaggedAt: string | null;
  /** When the receiving bank's return was credited back to the wallet (its `payout_return` entry), or null. */
  returnedAt: string | null;
};

// $1 status or null, $2/$3 the cursor's (created_at, id) or nulls, $4 limit + 1. Newest first through the index
// ledger_entries_type_created_at_idx (type, created_at); the return, when there is one, by its unique key.
const LIST_ADMIN_PAYOUTS_SQL = `
SELECT ${entryColumns("e")}, u.email AS user_email, r.created_at AS returned_at
  FROM ledger_entries e
  JOIN "user" u ON u.id = e.user_id
  LEFT JOIN ledger_entries r ON r.user_id = e.user_id AND r.type = 'payout_return' AND r.ref_id = e.ref_id
 WHERE e.type = 'payout'
   AND ($1::text IS NULL OR e.status = $1)
   AND ($2::timestamptz IS NULL OR (e.created_at, e.id) < ($2::timestamptz, $3::bigint))
 ORDER BY e.created_at DESC, e.id DESC
 LIMIT $4`;

/** The admin view of a payout row, its owner's email and the time its return landed (null: not returned). */
export function adminPayoutView(entry: LedgerEntry, userEmail: string, returnedAt: Date | null): AdminPayoutView {
  return {
    ...payoutView(entry),
    userId: entry.userId,
    userEmail,
    payoutId: entry.bankChargeId,
    leaseExpiresAt: entry.leaseExpiresAt?.toISOString() ?? null,
    settleFlaggedAt: entry.settleFlaggedAt?.toISOString() ?? null,
    returnedAt: returnedAt?.toISOString() ?? null,
  };
}

/**
 * One page of every user's payouts for admins, newest first by `(created_at, id)`, optionally only those in
 * `status`: at most `limit` rows (1..100, default 50) after the position of `cursor` (lib/pagination/cursor.ts; a
 * cursor is bound to the status it was made with). Returns the page and its `nextCursor` (null on the last page), or
 * `ok: false` with a detail for a malformed or foreign cursor. Throws database errors.
 */
export async function listAdminPayouts(
  options: { status?: EntryStatus; limit?: number; cursor?: string } = {},
): Promise<PageResult<AdminPayoutView>> {
  const limit = boundedLimit(options.limit);
  const scope = `status:${options.status ?? "*"}`;
  const after = keysetAfter(options.cursor, "admin-payouts", scope);
  if (!after.ok) return after;
  const result = await pool().query(LIST_ADMIN_PAYOUTS_SQL, [options.status ?? null, ...after.params, limit + 1]);
  const rows = result.rows.map((row) => ({
    entry: toLedgerEntry(row),
    email: row.user_email as string,
    returnedAt: (row.returned_at as Date | null) ?? null,
  }));
  const page = pageOf(
    rows,
    limit,
    "admin-payouts",
    scope,
    (row) => ({ createdAt: row.entry.createdAt, id: row.entry.id }),
    (row) => adminPayoutView(row.entry, row.email, row.returnedAt),
  );
  return { ok: true, ...page };
}
