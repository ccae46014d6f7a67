/**
 * The webhook's settlement in one statement (docs/decisions/045, 053 and 063): the database function
 * webhook_settle_entry moves the unfinished top-up or payout that a signed `charge.succeeded` or `payout.paid` names
 * to `succeeded` with the bank's id (ledger_settle_matching_entry, through ledger_move_entry: a top-up's credit, a
 * payout's hold posted) and records the event (webhook_record_event) in the same commit, so the move and its event
 * record land together or not at all (case C19).
 */
import { pool } from "../db";
import { prepared, type Queryable } from "./queryable";

/** A signed success, as the webhook read it; the entry it names by its merchant reference's parts. */
export interface WebhookSuccess {
  /** `topup` for a `charge.succeeded`, `payout` for a `payout.paid`. */
  readonly entryType: "topup" | "payout";
  /** The entry's owner and ref id, parsed from the event's merchant reference. */
  readonly userId: string;
  readonly refId: string;
  /** The bank's event id and type (the event record's key and kind). */
  readonly eventId: string;
  readonly eventType: string;
  readonly merchantRef: string;
  /** The bank's charge id or payout id. */
  readonly bankId: string;
  /** The amount in minor units of `currency` (must equal the entry's). */
  readonly amountMinor: number;
  readonly currency: string;
  /** The event's body as received, kept on the event record. */
  readonly payload: string;
}

/** The entry a signed success settled. */
export interface SettledFromWebhook {
  readonly entryId: number;
  /** True when the row has no stored first response yet (its request's reply was lost): the caller stores one. */
  readonly responseMissing: boolean;
}

// One call, arguments by name. No row: nothing was written.
const SETTLE_ENTRY_SQL = `SELECT (s.entry).id, (s.entry).response_status
  FROM webhook_settle_entry(
         p_entry_type => $1, p_user_id => $2, p_ref_id => $3, p_event_id => $4, p_type => $5, p_merchant_ref => $6,
         p_bank_id => $7, p_amount_minor => $8::bigint, p_currency => $9, p_payload => $10) AS s`;

/**
 * Settles the unfinished entry that `success` matches (same type, amount in minor units and currency, no other bank
 * id) and records the event, in one statement on `db` (contract section 5: the bank's webhook; section 14: a payout
 * paid; section 2: money moves with the row's final state). Returns the settled entry; null when nothing was written
 * (no such unfinished row: the caller judges the event the long way, lib/topups/settle-topup.ts or
 * lib/payouts/settle-payout.ts). Throws database errors as they come.
 */
export async function settleFromWebhook(
  success: WebhookSuccess,
  db: Queryable = pool(),
): Promise<SettledFromWebhook | null> {
  const result = await db.query<{ id: string; response_status: number | null }>(
    prepared("webhook_settle_entry", SETTLE_ENTRY_SQL, [
      success.entryType,
      success.userId,
      success.refId,
      success.eventId,
      success.eventType,
      success.merchantRef,
      success.bankId,
      success.amountMinor,
      success.currency,
      success.payload,
    ]),
  );
  const row = result.rows[0];
  return row ? { entryId: Number(row.id), responseMissing: row.response_status === null } : null;
}
