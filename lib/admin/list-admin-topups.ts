import { z } from "zod";
import { pool } from "../db";
import { entryColumns, toLedgerEntry, topupView, type EntryStatus, type LedgerEntry, topupViewSchema } from "../ledger";
import { boundedLimit, keysetAfter, pageOf, type Page, type PageResult } from "../pagination/cursor";
import { positionOf } from "../topups/list-topups";

/** The admin's view of a top-up (contract section 4: `T & { userId, chargeId, leaseExpiresAt }`, and a little more). */
export const adminTopupViewSchema = topupViewSchema
  .extend({
    userId: z.string(),
    userEmail: z.string(),
    chargeId: z.string().nullable().meta({ description: "The bank's charge id, once known." }),
    leaseExpiresAt: z.iso.datetime().nullable(),
    leaseOwner: z
      .string()
      .nullable()
      .meta({ description: "The worker holding the lease while the row is unfinished." }),
    attempt: z.int().min(1).meta({ description: "The fencing token: raised on every take-over." }),
  })
  .meta({ id: "AdminTopup" });
export type AdminTopupView = z.infer<typeof adminTopupViewSchema>;

const LIST_ADMIN_TOPUPS_SQL = `
SELECT ${entryColumns("e")}, u.email AS user_email
  FROM ledger_entries e JOIN "user" u ON u.id = e.user_id
 WHERE e.type = 'topup'
   AND ($1::text IS NULL OR e.status = $1)
   AND (NOT $2::boolean OR (e.status IN ('initiated', 'processing') AND e.lease_expires_at < now()))
   AND ($3::timestamptz IS NULL OR (e.created_at, e.id) < ($3::timestamptz, $4::bigint))
   AND ($6::text IS NULL OR u.email = $6)
 ORDER BY e.created_at DESC, e.id DESC
 LIMIT $5`;

/**
 * One page of every user's top-ups for admins (contract section 4: `GET /api/v1/admin/topups?status=&stuck=1&user=
 * &limit=&cursor=`), newest first by `(created_at, id)`. `stuck` keeps unfinished rows whose lease has expired (what
 * the reconciler will take over); `userEmail` (lowercased, as stored) keeps one user's rows. At most `limit` rows (1..100, default 50) after the position of `cursor`
 * (lib/pagination/cursor.ts; a cursor is bound to the filters it was made with).
 *
 * Returns the page and its `nextCursor` (null on the last page), or `ok: false` with a 400 detail for a malformed
 * or foreign cursor. Throws database errors.
 */
export async function listAdminTopups(
  options: { status?: EntryStatus; stuck?: boolean; userEmail?: string; limit?: number; cursor?: string } = {},
): Promise<PageResult<AdminTopupView>> {
  const limit = boundedLimit(options.limit);
  const scope = `status:${options.status ?? "*"}|stuck:${options.stuck ? 1 : 0}${userScope(options.userEmail)}`;
  const after = keysetAfter(options.cursor, "admin-topups", scope);
  if (!after.ok) return after;
  const result = await pool().query(LIST_ADMIN_TOPUPS_SQL, [
    options.status ?? null,
    options.stuck ?? false,
    ...after.params,
    limit + 1,
    options.userEmail ?? null,
  ]);
  return { ok: true, ...adminTopupPage(result.rows, limit, "admin-topups", scope) };
}

/**
 * The user filter's part of a cursor's scope: empty without one (cursors made before the filter existed stay valid),
 * else the email, so a cursor of one user's list is refused for another's.
 */
export function userScope(userEmail: string | undefined): string {
  return userEmail === undefined ? "" : `|user:${userEmail}`;
}

/**
 * A page of admin views out of rows of `entryColumns("e")` plus `user_email`, read with `LIMIT limit + 1` in list
 * order (see lib/pagination/cursor.ts `pageOf`).
 */
export function adminTopupPage(
  rows: Record<string, unknown>[],
  limit: number,
  list: "admin-topups" | "admin-stuck-topups",
  scope: string,
): Page<AdminTopupView> {
  const entries = rows.map((row) => ({ entry: toLedgerEntry(row), email: row.user_email as string }));
  return pageOf(
    entries,
    limit,
    list,
    scope,
    (row) => positionOf(row.entry),
    (row) => adminTopupView(row.entry, row.email),
  );
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
    attempt: entry.fencingToken,
  };
}
