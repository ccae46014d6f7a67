/**
 * Applies a signed payout webhook (contract section 14; docs/decisions/060 and 064); called by
 * lib/webhooks/handle-bank-webhook.ts after the signature verified. A signed `payout.paid` that matches an unfinished
 * payout (its key, amount in minor units, currency, and no other bank payout id) is the bank's word that the money
 * left, as a signed charge success is (contract section 5): it posts the hold in one statement with the event's record
 * (lib/ledger `settleFromWebhook`). Every other event (a `payout.failed` or `payout.returned`, which would give money
 * back, or a `payout.paid` that matches no unfinished payout) is a claim: the app asks the bank for the payout
 * (`GET /payouts/{id}`) and applies the bank's answer (lib/payouts/settle-payout.ts). So a `payout.failed` for a
 * payout the bank paid releases nothing, a `payout.returned` delivered before `payout.paid` posts the payout and then
 * credits its return, and a return delivered three times credits once (the return's entry is keyed by the payout).
 * When the bank cannot be asked, 503: nothing moved, the bank redelivers. The event and what it did are recorded in
 * bank_webhook_events, in the transaction that moved the row.
 */
import type { BankCallOptions } from "../bank/client";
import { type MerchantRefParts, parsePayoutMerchantRef } from "../bank/merchant-ref";
import { getPayout as getBankPayout, type PayoutEvent } from "../bank/payouts-client";
import { withTransaction } from "../db";
import { findEntryByKey, getEntryById, isTerminal, operationKey, type Queryable, settleFromWebhook } from "../ledger";
import { log } from "../log";
import { noteSettleFailure } from "../topups/settle-topup";
import { settlePayout, storePayoutResponse } from "./settle-payout";

/** What a payout event did; recorded per event id. */
export type PayoutWebhookOutcome =
  | "payout_paid"
  | "payout_released"
  | "payout_returned"
  | "payout_pending"
  | "duplicate"
  | "anomaly_unknown_merchant_ref"
  | "anomaly_payout_mismatch";

/** Outcomes that applied the event: they replace an earlier delivery's recorded outcome (case C19). */
export const APPLIED_PAYOUT_OUTCOMES: readonly PayoutWebhookOutcome[] = [
  "payout_paid",
  "payout_released",
  "payout_returned",
];

export type PayoutEventResult =
  | { readonly kind: "received"; readonly outcome: PayoutWebhookOutcome }
  | { readonly kind: "bank_unavailable"; readonly about: "payout"; readonly reason: string };

/** The recorder the webhook handler passes in (lib/webhooks/record-webhook-event.ts). */
export type RecordPayoutEvent = (
  db: Queryable | null,
  event: {
    id: string;
    type: string;
    data: { merchantRef: string; chargeId: string; amount: number; currency: string };
  },
  text: string,
  outcome: PayoutWebhookOutcome,
  detail: string | null,
) => Promise<void>;

/**
 * Applies `event` (signature verified; `text` its exact body) on the bank's own word, recording it through
 * `deps.record`. Returns `received` with the outcome (answer 200) or `bank_unavailable` (answer 503, nothing moved).
 * Throws database errors (the failure is counted on the row first: case C28).
 */
export async function handlePayoutEvent(
  event: PayoutEvent,
  text: string,
  deps: { readonly record: RecordPayoutEvent; readonly bank: BankCallOptions },
): Promise<PayoutEventResult> {
  const recorded = { id: event.id, type: event.type, data: { ...event.data, chargeId: event.data.payoutId } };
  const parts = parsePayoutMerchantRef(event.data.merchantRef);
  if (parts && event.type === "payout.paid" && (await settlePaidPayout(event, text, parts))) {
    return { kind: "received", outcome: "payout_paid" };
  }
  const entry = parts ? await findEntryByKey(operationKey(parts.userId, "payout", parts.refId)) : null;
  if (!entry) {
    await deps.record(null, recorded, text, "anomaly_unknown_merchant_ref", "no payout has this merchant reference");
    log().warn({ eventId: event.id, data: event.data }, "bank webhook anomaly: unknown payout key");
    return { kind: "received", outcome: "anomaly_unknown_merchant_ref" };
  }
  const looked = await getBankPayout(event.data.payoutId, deps.bank);
  if (looked.kind === "unknown") return { kind: "bank_unavailable", about: "payout", reason: looked.reason };
  if (looked.kind !== "found") {
    const detail = `${event.type} not confirmed: the bank answered ${looked.kind === "not_found" ? "not found" : looked.code}`;
    await deps.record(null, recorded, text, "anomaly_payout_mismatch", detail);
    return { kind: "received", outcome: "anomaly_payout_mismatch" };
  }
  let outcome: PayoutWebhookOutcome;
  let settledEntry = entry;
  try {
    await withTransaction(async (tx) => {
      const settled = await settlePayout(
        entry,
        { source: "bank", payout: looked.payout },
        { actor: "webhook", guard: { kind: "status_only" }, detail: `webhook: ${event.type} ${event.id}`, db: tx },
      );
      settledEntry = settled.entry;
      outcome = outcomeOf(settled.kind);
      await deps.record(tx, recorded, text, outcome, settled.kind === "anomaly" ? settled.detail : null);
    });
  } catch (error) {
    await noteSettleFailure(entry, error);
    throw error;
  }
  if (isTerminal(settledEntry.status) && settledEntry.response === null) await storePayoutResponse(settledEntry);
  if (outcome!.startsWith("anomaly_")) log().warn({ eventId: event.id, data: event.data }, "bank webhook anomaly");
  return { kind: "received", outcome: outcome! };
}

/**
 * The common case of a signed `payout.paid`, in one statement: the unfinished payout named by `key` posts its hold
 * and the event is recorded as `payout_paid` in the same commit (docs/decisions/064). Stores the row's first response
 * when its request's reply was lost. Returns true when the payout was settled; false when nothing was written (no
 * unfinished payout that the event matches, or the statement failed: the long way meets the same error again and
 * counts it on the row). Throws only when storing the response fails (the payout is settled; the bank redelivers).
 */
async function settlePaidPayout(event: PayoutEvent, text: string, key: MerchantRefParts): Promise<boolean> {
  let settled: Awaited<ReturnType<typeof settleFromWebhook>>;
  try {
    settled = await settleFromWebhook({
      entryType: "payout",
      userId: key.userId,
      refId: key.refId,
      eventId: event.id,
      eventType: event.type,
      merchantRef: event.data.merchantRef,
      bankId: event.data.payoutId,
      amountMinor: event.data.amount,
      currency: event.data.currency,
      payload: text,
    });
  } catch (error) {
    log().warn({ err: error, eventId: event.id }, "bank webhook: one-statement payout settlement failed; the long way");
    return false;
  }
  if (settled === null) return false;
  if (settled.responseMissing) {
    const entry = await getEntryById({ userId: key.userId, entryId: settled.entryId });
    if (entry) await storePayoutResponse(entry);
  }
  return true;
}

function outcomeOf(kind: Awaited<ReturnType<typeof settlePayout>>["kind"]): PayoutWebhookOutcome {
  switch (kind) {
    case "paid":
      return "payout_paid";
    case "released":
      return "payout_released";
    case "returned":
      return "payout_returned";
    case "pending":
      return "payout_pending";
    case "unchanged":
      return "duplicate";
    case "anomaly":
      return "anomaly_payout_mismatch";
  }
}
