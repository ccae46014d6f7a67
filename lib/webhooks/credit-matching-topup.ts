import type { MerchantRefParts } from "../bank/merchant-ref";
import { settleFromWebhook } from "../ledger";
import { log } from "../log";
import type { ChargeEvent } from "./bank-event-schema";

/**
 * The common case of a signed `charge.succeeded`, in one statement (lib/ledger `settleFromWebhook`;
 * docs/decisions/045 and 053): the unfinished top-up named by `key` (the event's merchant reference, parsed) moves to
 * `succeeded` with the charge id and its credit, exactly as lib/topups/settle-topup.ts moves an unfinished row that matches a signed success, and the event
 * (`text`: its body as received) is recorded as `credited` in the same commit (case C19).
 * Returns true when the row was credited; false when nothing was written: no unfinished row that the charge matches
 * (same amount in minor units, same currency, no other charge id), or the statement failed. The caller then judges
 * the event the long way, which meets the same error again and counts it on the row. Never throws.
 */
export async function creditMatchingTopup(event: ChargeEvent, text: string, key: MerchantRefParts): Promise<boolean> {
  const { data } = event;
  try {
    const settled = await settleFromWebhook({
      entryType: "topup",
      userId: key.userId,
      refId: key.refId,
      eventId: event.id,
      eventType: event.type,
      merchantRef: data.merchantRef,
      bankId: data.chargeId,
      amountMinor: data.amount,
      currency: data.currency,
      payload: text,
    });
    return settled !== null;
  } catch (error) {
    log().warn({ err: error, eventId: event.id }, "bank webhook: one-statement credit failed; settling the long way");
    return false;
  }
}
