/**
 * Applies one bank webhook delivery (contract section 5). The signature is checked over the raw bytes first, here
 * and nowhere else; after that a delivery is answered 200 whatever it held, because a non-2xx only makes the bank
 * retry, and an event that cannot be applied will not become applicable by retrying. The one exception is a question
 * the app must ask the bank and cannot, because the bank does not answer: 503, nothing changed, and the bank
 * redelivers.
 *
 * The verified body is read once as the one event union (lib/webhooks/parse-bank-event.ts) and dispatched on its
 * `type`: charge events to lib/webhooks/handle-charge-event.ts, refund events to
 * lib/refunds/handle-refund-event.ts (contract section 11), dispute events to lib/chargebacks/handle-dispute-event.ts
 * (section 12). Each records the event and what it did through lib/webhooks/record-webhook-event.ts; a body that is
 * none of them is recorded as unusable (lib/webhooks/record-unusable-event.ts, case C18).
 */
import type { BankCallOptions } from "../bank/client";
import { verifyWebhookSignature, type SignatureFailureReason } from "../bank/signature";
import { handleDisputeEvent, type DisputeEventResult } from "../chargebacks/handle-dispute-event";
import { env } from "../env";
import { log } from "../log";
import { handlePayoutEvent, type PayoutEventResult } from "../payouts/handle-payout-event";
import { handleRefundEvent, type RefundEventResult } from "../refunds/handle-refund-event";
import { handleChargeEvent, type ChargeEventResult } from "./handle-charge-event";
import { parseBankEvent } from "./parse-bank-event";
import { recordUnusableEvent } from "./record-unusable-event";
import { recordWebhookEvent } from "./record-webhook-event";

/** What became of a delivery; the route turns it into the answer (app/api/v1/bank/webhook/route.ts). */
export type WebhookResult =
  /** Answer 400; nothing changed. */
  | { readonly kind: "invalid_signature"; readonly reason: SignatureFailureReason }
  /** Answer 200: a signed body that is no event the wallet can read, recorded as such (case C18). */
  | { readonly kind: "received"; readonly outcome: "unusable_event" }
  /**
   * What the event's handler did: `received` with its outcome (answer 200), or `bank_unavailable` when the bank could
   * not be asked (`about` says what about; answer 503, nothing changed: contract sections 5, 11 and 12).
   */
  | ChargeEventResult
  | RefundEventResult
  | DisputeEventResult
  | PayoutEventResult;

/** What the app wanted to ask the bank about when it could not: the 503's sentence says which. */
export type BankUnavailableAbout = Extract<WebhookResult, { kind: "bank_unavailable" }>["about"];

/**
 * Budget of a bank call that confirms an event, in ms: 2 s. The sandbox gives each delivery 5 s
 * (BANK_WEBHOOK_TIMEOUT_MS) and a lookup answers in milliseconds; past 2 s the app answers 503 in time for the
 * bank to record it and redeliver, instead of being cut off mid-answer.
 */
const CONFIRM_TIMEOUT_MS = 2000;

/**
 * Verifies and applies a delivery. `rawBody` is the request body exactly as received (already bounded by
 * WEBHOOK_BODY_LIMIT_BYTES); `signatureHeader` the `Bank-Signature` header (null when absent); `nowSeconds` the
 * verifier's clock in unix seconds.
 * Returns `invalid_signature` (answer 400, nothing changed), `bank_unavailable` (answer 503, nothing changed) or
 * `received` with the outcome (answer 200). Throws on database failures (answer 500, so the bank redelivers later),
 * after counting a failed settlement on the row.
 */
export async function handleBankWebhook(
  rawBody: Buffer,
  signatureHeader: string | null,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): Promise<WebhookResult> {
  const settings = env();
  const verified = verifyWebhookSignature({
    rawBody,
    header: signatureHeader,
    secrets: settings.webhookSecrets,
    nowSeconds,
  });
  if (!verified.ok) return { kind: "invalid_signature", reason: verified.reason };
  const parsed = parseBankEvent(rawBody);
  if (parsed.kind === "unusable") {
    await recordUnusableEvent(rawBody, parsed);
    log().warn({ reason: parsed.reason }, "bank webhook: unusable signed event recorded");
    return { kind: "received", outcome: "unusable_event" };
  }
  const bank: BankCallOptions = { bankUrl: settings.BANK_URL, timeoutMs: CONFIRM_TIMEOUT_MS };
  const { event, text } = parsed;
  switch (event.type) {
    case "charge.succeeded":
    case "charge.failed":
      return await handleChargeEvent(event, text, bank);
    case "refund.succeeded":
    case "refund.failed":
      return await handleRefundEvent(event, text, { record: recordWebhookEvent, bank });
    case "charge.disputed":
    case "charge.dispute_closed":
      return await handleDispute(rawBody, bank);
    case "payout.paid":
    case "payout.failed":
    case "payout.returned":
      return await handlePayoutEvent(event, text, { record: recordWebhookEvent, bank });
  }
}

/**
 * A dispute event. Its handler reads the body itself, with the dispute events' schema the union holds
 * (lib/webhooks/bank-event-schema.ts), so it reads every body dispatched here; a null from it is a bug, thrown.
 */
async function handleDispute(rawBody: Buffer, bank: BankCallOptions): Promise<DisputeEventResult> {
  const result = await handleDisputeEvent(rawBody, { record: recordWebhookEvent, bank });
  if (!result) throw new Error("bank webhook: the dispute handler refused a body the dispute events' schema accepts");
  return result;
}
