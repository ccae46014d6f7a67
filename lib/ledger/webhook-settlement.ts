/**
 * The webhook's credit in one statement (docs/decisions/045 and 053): the database function webhook_credit_topup moves
 * the unfinished top-up that a signed `charge.succeeded` names to `succeeded` with its charge id and credit
 * (ledger_credit_matching_topup, through ledger_move_entry) and records the event as `credited`
 * (webhook_record_event) in the same commit, so the credit and its event record land together or not at all (case
 * C19).
 */
import { pool } from "../db";
import { prepared, type Queryable } from "./queryable";

/** A signed `charge.succeeded`, as the webhook read it; the top-up it names by its merchant reference's parts. */
export interface WebhookCharge {
  /** The top-up's owner and ref id, parsed from the event's merchant reference. */
  readonly userId: string;
  readonly refId: string;
  /** The bank's event id and type (the event record's key and kind). */
  readonly eventId: string;
  readonly eventType: string;
  readonly merchantRef: string;
  readonly chargeId: string;
  /** The charge's amount in minor units of `currency` (must equal the top-up's). */
  readonly amountMinor: number;
  readonly currency: string;
  /** The event's body as received, kept on the event record. */
  readonly payload: string;
}

// One call, arguments by name. No row: nothing was written.
const CREDIT_TOPUP_SQL = `SELECT (c.entry).id
  FROM webhook_credit_topup(
         p_user_id => $1, p_ref_id => $2, p_event_id => $3, p_type => $4, p_merchant_ref => $5, p_charge_id => $6,
         p_amount_minor => $7::bigint, p_currency => $8, p_payload => $9) AS c`;

/**
 * Credits the unfinished top-up that `charge` matches (same amount in minor units, same currency, no other charge id)
 * and records the event as `credited`, in one statement on `db` (contract section 4: the bank's webhook; section 2:
 * money moves with the row's final state). Returns true when the row was credited; false when nothing was written
 * (no such unfinished row: the caller judges the event the long way, lib/topups/settle-topup.ts). Throws database
 * errors as they come.
 */
export async function creditTopupFromWebhook(charge: WebhookCharge, db: Queryable = pool()): Promise<boolean> {
  const result = await db.query(
    prepared("webhook_credit_topup", CREDIT_TOPUP_SQL, [
      charge.userId,
      charge.refId,
      charge.eventId,
      charge.eventType,
      charge.merchantRef,
      charge.chargeId,
      charge.amountMinor,
      charge.currency,
      charge.payload,
    ]),
  );
  return result.rows.length > 0;
}
