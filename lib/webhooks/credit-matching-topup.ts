import type { MerchantRefParts } from "../bank/merchant-ref";
import { pool } from "../db";
import { prepared } from "../ledger";
import { log } from "../log";
import type { ChargeEvent } from "./bank-event-schema";

// One call, arguments by name: webhook_credit_topup (prisma/functions/webhook_credit_topup.sql) credits the matching
// unfinished top-up (ledger_credit_matching_topup) and records the event as `credited` (webhook_record_event) in the
// same commit. No row: nothing was written.
const CREDIT_TOPUP_SQL = `SELECT (c.entry).id
  FROM webhook_credit_topup(
         p_user_id => $1, p_ref_id => $2, p_event_id => $3, p_type => $4, p_merchant_ref => $5, p_charge_id => $6,
         p_amount_minor => $7::bigint, p_currency => $8, p_payload => $9) AS c`;

/**
 * The common case of a signed `charge.succeeded`, in one statement (docs/decisions/045 and 053): the unfinished
 * top-up named by `key` (the event's merchant reference, parsed) moves to `succeeded` with the charge id and its
 * credit, exactly as lib/topups/settle-topup.ts moves an unfinished row that matches a signed success, and the event
 * (`text`: its body as received) is recorded as `credited` in the same commit (case C19).
 * Returns true when the row was credited; false when nothing was written: no unfinished row that the charge matches
 * (same amount in minor units, same currency, no other charge id), or the statement failed. The caller then judges
 * the event the long way, which meets the same error again and counts it on the row. Never throws.
 */
export async function creditMatchingTopup(event: ChargeEvent, text: string, key: MerchantRefParts): Promise<boolean> {
  const { data } = event;
  try {
    const result = await pool().query(
      prepared("webhook_credit_topup", CREDIT_TOPUP_SQL, [
        key.userId,
        key.refId,
        event.id,
        event.type,
        data.merchantRef,
        data.chargeId,
        data.amount,
        data.currency,
        text,
      ]),
    );
    return result.rows.length > 0;
  } catch (error) {
    log().warn({ err: error, eventId: event.id }, "bank webhook: one-statement credit failed; settling the long way");
    return false;
  }
}
