/**
 * The newest transfers between users, for the admin transfers page (contract section 15.1; docs/decisions/063): each
 * with its sender, its recipient's address as written, and its reversal when an admin made one. Read-only.
 */
import { pool } from "../db";
import type { EntryStatus } from "../ledger";

/** One transfer as the admin page shows it; amounts in minor units. */
export interface AdminTransferRow {
  readonly senderId: string;
  readonly senderEmail: string;
  readonly refId: string;
  /** The recipient's address as the sender wrote it. */
  readonly to: string;
  readonly note: string | null;
  readonly amountMinor: number;
  readonly currency: string;
  readonly status: EntryStatus;
  readonly failureReason: string | null;
  readonly createdAt: Date;
  /** The admin's reversal (its `transfer_reversal` entry, by its key), or null when not reversed. */
  readonly reversal: { readonly createdAt: Date; readonly reason: string } | null;
}

/** The page lists this many transfers: one screen to find a recent one; older ones are reversed through the API. */
export const ADMIN_TRANSFERS_LISTED_MAX = 50;

// $1 limit. Newest first through ledger_entries_type_created_at_idx (type, created_at); the sender by id, the reversal
// by its unique key (the transfer's sender and ref id).
const LIST_ADMIN_TRANSFERS_SQL = `
SELECT t.user_id AS sender_id, u.email AS sender_email, t.ref_id, t.params->>'to' AS recipient,
       t.params->>'note' AS note, t.amount_minor::text AS amount_minor, t.currency, t.status, t.failure_reason,
       t.created_at, r.created_at AS reversed_at, r.params->>'reason' AS reversal_reason
  FROM ledger_entries t
  JOIN "user" u ON u.id = t.user_id
  LEFT JOIN ledger_entries r ON r.user_id = t.user_id AND r.type = 'transfer_reversal' AND r.ref_id = t.ref_id
 WHERE t.type = 'transfer'
 ORDER BY t.created_at DESC, t.id DESC
 LIMIT $1`;

/**
 * The newest `limit` transfers of every user (default {@link ADMIN_TRANSFERS_LISTED_MAX}), newest first by
 * `(created_at, id)`, each with its reversal or null. Throws database errors.
 */
export async function listAdminTransfers(limit = ADMIN_TRANSFERS_LISTED_MAX): Promise<AdminTransferRow[]> {
  const result = await pool().query<{
    sender_id: string;
    sender_email: string;
    ref_id: string;
    recipient: string | null;
    note: string | null;
    amount_minor: string;
    currency: string;
    status: EntryStatus;
    failure_reason: string | null;
    created_at: Date;
    reversed_at: Date | null;
    reversal_reason: string | null;
  }>(LIST_ADMIN_TRANSFERS_SQL, [limit]);
  return result.rows.map((row) => ({
    senderId: row.sender_id,
    senderEmail: row.sender_email,
    refId: row.ref_id,
    to: row.recipient ?? "",
    note: row.note,
    amountMinor: Number(row.amount_minor),
    currency: row.currency,
    status: row.status,
    failureReason: row.failure_reason,
    createdAt: row.created_at,
    reversal: row.reversed_at ? { createdAt: row.reversed_at, reason: row.reversal_reason ?? "" } : null,
  }));
}
