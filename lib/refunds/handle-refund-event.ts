/**
 * Applies a signed refund webhook (contract section 11); called by lib/webhooks/handle-bank-webhook.ts after the
 * signature verified. Like charge events, its fields, type and order are claims:
 * - `refund.succeeded` (signed) makes the row final: the money left the wallet when the refund was claimed, so
 *   nothing more moves, and a terminal row never moves again (three deliveries and the reconciler: one final state);
 * - `refund.failed` gives nothing back on its own word: the app asks the bank (`GET /refunds/{id}`) and releases the
 *   reservation only when the bank says `failed` (as charge failures are verified, case C14); when the bank does not
 *   answer, 503 and the bank redelivers.
 * The event and what it did are recorded in bank_webhook_events, in the same transaction as the row's move.
 */
import { z } from "zod";
import type { BankCallOptions } from "../bank/client";
import { getRefund } from "../bank/refunds-client";
import { withTransaction } from "../db";
import { findEntryByKey, isTerminal, operationKey, type LedgerEntry, type Queryable } from "../ledger";
import { log } from "../log";
import { parseRefundMerchantRef } from "./refund-ref";
import { noteSettleFailure } from "../topups/settle-topup";
import { settleRefund, storeRefundResponse, type RefundEvidence } from "./settle-refund";

const printable = (max: number) => z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), "printable ASCII");

/** A refund event as the bank sends it (docs/bank-sandbox.md "Webhooks"); bounded like charge events (case C18). */
export const refundEventSchema = z
  .object({
    id: printable(200),
    type: z.enum(["refund.succeeded", "refund.failed"]),
    data: z.object({
      refundId: printable(200),
      chargeId: printable(200),
      merchantRef: printable(400),
      amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
      currency: z.string().regex(/^[A-Z]{3}$/, "ISO 4217 code"),
    }),
  })
  .meta({
    id: "RefundEvent",
    description:
      "A refund settled (contract section 11). A `refund.failed` is confirmed with the bank (`GET /refunds/{id}`) " +
      "before the reservation is given back.",
  });
export type RefundEvent = z.infer<typeof refundEventSchema>;

/** What a refund event did; recorded per event id. */
export type RefundWebhookOutcome =
  | "refund_succeeded"
  | "refund_released"
  | "duplicate"
  | "ignored_stale"
  | "anomaly_unknown_merchant_ref"
  | "anomaly_refund_mismatch";

export type RefundEventResult =
  | { readonly kind: "received"; readonly outcome: RefundWebhookOutcome }
  | { readonly kind: "bank_unavailable"; readonly about: "refund_failure"; readonly reason: string };

/**
 * The event when `text` is a refund event (its `type` starts with `refund.`), else null (the caller handles charge
 * events and unusable bodies). A body whose type says refund but whose fields are out of shape is null too: the
 * caller records it as unusable.
 */
export function parseRefundEvent(text: string): RefundEvent | null {
  try {
    const checked = refundEventSchema.safeParse(JSON.parse(text));
    return checked.success ? checked.data : null;
  } catch {
    return null;
  }
}

/** Outcomes that applied the event: they replace an earlier delivery's recorded outcome (case C19). */
export const APPLIED_REFUND_OUTCOMES: readonly RefundWebhookOutcome[] = ["refund_succeeded", "refund_released"];

/**
 * Records an event and its outcome in bank_webhook_events on `db` (the caller's transaction), or on the pool when
 * `db` is null: the webhook handler's one recorder, passed in.
 */
export type RecordRefundEvent = (
  db: Queryable | null,
  event: RefundEvent,
  text: string,
  outcome: RefundWebhookOutcome,
  detail: string | null,
) => Promise<void>;

/**
 * Applies `event` (signature already verified; `text` its exact body), recording it through `deps.record`.
 * Returns `received` with the outcome (answer 200) or `bank_unavailable` (answer 503: a refund's failure could not
 * be confirmed, nothing moved). Throws database errors.
 */
export async function handleRefundEvent(
  event: RefundEvent,
  text: string,
  deps: { readonly record: RecordRefundEvent; readonly bank: BankCallOptions },
): Promise<RefundEventResult> {
  const { record, bank } = deps;
  const parts = parseRefundMerchantRef(event.data.merchantRef);
  const entry = parts ? await findEntryByKey(operationKey(parts.userId, "refund", parts.refundId)) : null;
  if (!entry) {
    await record(null, event, text, "anomaly_unknown_merchant_ref", "no refund has this merchant reference");
    log().warn({ eventId: event.id, data: event.data }, "bank webhook anomaly: unknown refund key");
    return { kind: "received", outcome: "anomaly_unknown_merchant_ref" };
  }
  let evidence: RefundEvidence;
  if (event.type === "refund.succeeded") {
    evidence = { source: "signed_success", refundId: event.data.refundId, amountMinor: event.data.amount };
  } else {
    if (isTerminal(entry.status)) {
      const outcome = entry.status === "failed" ? "duplicate" : "ignored_stale";
      await record(null, event, text, outcome, `the refund row is already ${entry.status}`);
      return { kind: "received", outcome };
    }
    const looked = await getRefund(event.data.refundId, bank);
    if (looked.kind !== "found") {
      const reason = looked.kind === "not_found" ? "the bank has no such refund" : JSON.stringify(looked);
      if (looked.kind === "unknown") return { kind: "bank_unavailable", about: "refund_failure", reason };
      await record(null, event, text, "anomaly_refund_mismatch", `refund.failed not confirmed: ${reason}`);
      return { kind: "received", outcome: "anomaly_refund_mismatch" };
    }
    evidence = { source: "bank", refund: looked.refund };
  }
  const result = await settleInTransaction(entry, async (tx) => {
    const settled = await settleRefund(entry, evidence, {
      actor: "webhook",
      guard: { kind: "status_only" },
      detail: `webhook: ${event.type} ${event.id}`,
      db: tx,
    });
    const outcome: RefundWebhookOutcome =
      settled.kind === "succeeded"
        ? "refund_succeeded"
        : settled.kind === "released"
          ? "refund_released"
          : settled.kind === "anomaly"
            ? "anomaly_refund_mismatch"
            : settled.entry.status === (event.type === "refund.failed" ? "failed" : "succeeded")
              ? "duplicate"
              : "ignored_stale";
    const detail =
      settled.kind === "anomaly"
        ? settled.detail
        : outcome === "ignored_stale"
          ? `refund.failed not confirmed: the bank reports the refund ${evidence.source === "bank" ? evidence.refund.status : "succeeded"}`
          : null;
    await record(tx, event, text, outcome, detail);
    return { outcome, entry: settled.entry };
  });
  // The row's request may be gone: its first response is stored now, so a retry replays (first writer wins).
  if (isTerminal(result.entry.status) && result.entry.response === null) await storeRefundResponse(result.entry);
  if (result.outcome.startsWith("anomaly_"))
    log().warn({ eventId: event.id, data: event.data }, "bank webhook anomaly");
  return { kind: "received", outcome: result.outcome };
}

/**
 * Runs the event's settlement in one transaction; when it fails (the database refuses the give-back, a lost
 * connection), counts the failure on the refund row, flagging it after SETTLE_ATTEMPTS_MAX (contract section 5, case
 * C28), and rethrows: the webhook answers 500 and the bank redelivers, while admins see the row.
 */
async function settleInTransaction<T>(entry: LedgerEntry, work: (tx: Queryable) => Promise<T>): Promise<T> {
  try {
    return await withTransaction(work);
  } catch (error) {
    await noteSettleFailure(entry, error);
    throw error;
  }
}

/** For the reconciler's row work: the refund row's stored response after a finish (first writer wins). */
export async function storeFinishedRefundResponse(entry: LedgerEntry): Promise<void> {
  if (isTerminal(entry.status) && entry.response === null) await storeRefundResponse(entry);
}
