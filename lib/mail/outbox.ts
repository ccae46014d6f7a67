/**
 * The mail outbox (docs/decisions/054-mail-outbox.md): one row per event that sends a message, claimed before it is
 * sent and sent at most once. This module holds every statement that writes `mail_outbox`; receipts are queued by
 * the database itself (prisma/functions/mail_queue_receipt.sql), in the transaction that makes the money final.
 *
 *     queue (INSERT ... ON CONFLICT (event_key) DO NOTHING)       the claim of the event: one row, ever
 *     take  (pending and due -> sending, lease, fencing token +1)  the claim of the sending, SKIP LOCKED
 *     settle (sending -> sent | pending later | failed | unknown)  only by the holder of the current fencing token
 *     expire (sending past its lease -> unknown)                   a lost sender's row is never sent again
 */
import type { MailDb } from "./mail-db";

/** What a message is about; the table's CHECK lists the same names. */
export type MailKind = "receipt" | "address_check" | "password_reset" | "password_changed" | "new_device";

/** A row taken for sending: what to send and the token that settles it. */
export interface TakenMail {
  readonly id: number;
  readonly eventKey: string;
  readonly kind: MailKind;
  readonly userId: string;
  /** The ledger entry of a receipt; null for every other kind. */
  readonly entryId: number | null;
  readonly payload: Record<string, unknown> | null;
  /** Sending attempts so far, this one included. */
  readonly attempts: number;
  /** Settles only this attempt: a row taken again since (it cannot be while leased) is not touched. */
  readonly fencingToken: number;
}

/** How a sending attempt ended, as {@link settleMail} records it. */
export type MailSettlement =
  /** The server accepted the message. */
  | { readonly kind: "sent" }
  /** The server never accepted it (no connection, or a temporary 4xx refusal): try again at `retryAt`. */
  | { readonly kind: "retry"; readonly error: string; readonly retryAt: Date }
  /** The server refused it for good (5xx), or the message cannot be made: never tried again. */
  | { readonly kind: "failed"; readonly error: string }
  /** It may have been accepted (the connection broke after the message was handed over): never sent again. */
  | { readonly kind: "unknown"; readonly error: string };

/** The longest error text kept on a row (the column's CHECK), in characters. */
export const MAIL_ERROR_LENGTH_MAX = 500;

/**
 * Queues a message for an event, once: the event key is the claim (decision 054). Runs on `db` (a pool, or the
 * client of a transaction the event is part of).
 *
 * @param mail.eventKey names the event, at most 200 characters (`password-reset:<token hash>`, ...): the same key
 *   queued again queues nothing.
 * @param mail.kind what the message is; mail.userId its recipient (the address is read when it is sent).
 * @param mail.payload what the message needs beyond the user (a link), emptied once sent; null for none.
 * @returns `queued` for the first call with this key, `already_queued` for any later one.
 * @throws database errors (a key over 200 characters violates the CHECK: a bug, not an outcome).
 */
export async function queueMail(
  db: MailDb,
  mail: {
    eventKey: string;
    kind: Exclude<MailKind, "receipt">;
    userId: string;
    payload: Record<string, unknown> | null;
  },
): Promise<"queued" | "already_queued"> {
  const { rowCount } = await db.query(
    `INSERT INTO mail_outbox (event_key, kind, user_id, payload) VALUES ($1, $2, $3, $4)
     ON CONFLICT (event_key) DO NOTHING`,
    [mail.eventKey, mail.kind, mail.userId, mail.payload === null ? null : JSON.stringify(mail.payload)],
  );
  return rowCount === 1 ? "queued" : "already_queued";
}

/**
 * Takes up to `limit` due rows for sending (oldest due first), each leased to `workerId` for `leaseMs` with its
 * fencing token raised; rows another worker holds are skipped (`FOR UPDATE SKIP LOCKED`), so two workers never take
 * one row.
 *
 * @param options.workerId names the taker (host:pid:random) on the row while it sends.
 * @param options.limit rows per call, 1..100; options.leaseMs how long the taker may take to settle each, in ms.
 * @returns the rows taken (possibly none).
 * @throws database errors.
 */
export async function takeDueMail(
  db: MailDb,
  options: { workerId: string; limit: number; leaseMs: number },
): Promise<TakenMail[]> {
  const { rows } = await db.query<{
    id: number;
    event_key: string;
    kind: MailKind;
    user_id: string;
    entry_id: number | null;
    payload: Record<string, unknown> | null;
    attempts: number;
    fencing_token: number;
  }>(
    `UPDATE mail_outbox m
        SET status = 'sending', lease_owner = $1, lease_expires_at = now() + make_interval(secs => $3::int / 1000.0),
            attempts = m.attempts + 1, fencing_token = m.fencing_token + 1
      WHERE m.id IN (SELECT id FROM mail_outbox
                      WHERE status = 'pending' AND next_attempt_at <= now()
                      ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
      RETURNING m.id, m.event_key, m.kind, m.user_id, m.entry_id, m.payload, m.attempts, m.fencing_token`,
    [options.workerId, options.limit, options.leaseMs],
  );
  return rows.map((row) => ({
    id: row.id,
    eventKey: row.event_key,
    kind: row.kind,
    userId: row.user_id,
    entryId: row.entry_id,
    payload: row.payload,
    attempts: row.attempts,
    fencingToken: row.fencing_token,
  }));
}

/**
 * Records how a sending attempt ended, if `mail` still holds the row's current fencing token. A row whose lease ran
 * out meanwhile was made `unknown` by {@link expireMailLeases}; its own attempt may still say what happened (sent, or
 * never accepted), so an `unknown` row with the same token is settled too. A `retry` of such a row stays `unknown`
 * only if it could have been sent: a `retry` means the server never took the message, so it is safe to try again.
 *
 * @returns true when the row was settled by this call; false when another attempt holds it (nothing written).
 * @throws database errors.
 */
export async function settleMail(db: MailDb, mail: TakenMail, settlement: MailSettlement): Promise<boolean> {
  const error = settlement.kind === "sent" ? null : settlement.error.slice(0, MAIL_ERROR_LENGTH_MAX);
  const status = settlement.kind === "retry" ? "pending" : settlement.kind;
  const retryAt = settlement.kind === "retry" ? settlement.retryAt : null;
  const { rowCount } = await db.query(
    `UPDATE mail_outbox
        SET status = $3, lease_owner = NULL, lease_expires_at = NULL, last_error = $4,
            next_attempt_at = COALESCE($5, next_attempt_at),
            sent_at = CASE WHEN $3 = 'sent' THEN now() END,
            payload = CASE WHEN $3 = 'pending' THEN payload END
      WHERE id = $1 AND fencing_token = $2 AND status IN ('sending', 'unknown')`,
    [mail.id, mail.fencingToken, status, error, retryAt],
  );
  return rowCount === 1;
}

/**
 * Makes every row whose sending lease has run out `unknown` (its sender stopped mid-send: the message may have been
 * accepted), so it is never sent a second time; the admin page lists them. Returns how many rows it changed.
 * @throws database errors.
 */
export async function expireMailLeases(db: MailDb): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE mail_outbox
        SET status = 'unknown', lease_owner = NULL, lease_expires_at = NULL,
            last_error = 'the sender stopped before it recorded the outcome'
      WHERE status = 'sending' AND lease_expires_at < now()`,
  );
  return rowCount ?? 0;
}
