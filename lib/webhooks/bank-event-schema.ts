/**
 * The events the bank signs and sends to the webhook, as one union: charge events (contract section 5), refund events
 * (section 11), dispute events (section 12) and payout events (section 14). lib/webhooks/parse-bank-event.ts reads a body with it, and
 * lib/openapi/document.ts describes the webhook's request body with it.
 */
import { z } from "zod";
import { disputeEventSchema, type DisputeEvent } from "../chargebacks/handle-dispute-event";
import { payoutEventSchema, type PayoutEvent } from "../bank/payouts-client";
import { refundEventSchema, type RefundEvent } from "../refunds/handle-refund-event";

/** Printable ASCII without spaces, 1..`max` characters: ids and references as the bank writes them. */
const printable = (max: number) => z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), "printable ASCII");

/**
 * What a charge event must look like to be read at all (the OpenAPI document's `ChargeEvent`). Bounds: ids of 200
 * characters are far above any provider's (the sandbox's are 28); a merchant reference is at most 400
 * (lib/bank/merchant-ref.ts); amounts are positive integers JavaScript represents exactly. Anything else is
 * unusable (case C18).
 */
export const chargeEventSchema = z
  .object({
    id: printable(200),
    type: z.enum(["charge.succeeded", "charge.failed"]),
    data: z.object({
      chargeId: printable(200),
      merchantRef: printable(400),
      amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
      currency: z.string().regex(/^[A-Z]{3}$/, "ISO 4217 code"),
    }),
  })
  .meta({ id: "ChargeEvent", description: "A charge settled (contract section 5)." });

/** A charge event (`charge.succeeded`, `charge.failed`), checked for shape and bounds. */
export type ChargeEvent = z.infer<typeof chargeEventSchema>;

/**
 * Every event the bank signs (the OpenAPI document's `BankEvent`). The three kinds' `type` values are disjoint, so a
 * body matches at most one of them, and the webhook dispatches on `type`.
 */
export const bankEventSchema = z
  .union([chargeEventSchema, refundEventSchema, disputeEventSchema, payoutEventSchema])
  .meta({ id: "BankEvent" });

/** The one event union the webhook dispatches on; `type` tells the kinds apart. */
export type BankEvent = ChargeEvent | RefundEvent | DisputeEvent | PayoutEvent;
