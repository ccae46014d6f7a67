/**
 * The reconciler's work on a refund row left in flight (contract section 11): a row whose lease expired (its request
 * crashed, stalled or lost the bank's answer) is driven to the end by asking the bank again with the same key. A
 * repeat of `POST /refunds` with the row's key makes no second refund: it answers the refund the request made, or
 * makes the one the request never got to make (the money is already reserved for it). Its answer is settled like the
 * request's, and the row's first response stored for a client that retries.
 */
import type { BankCallOptions } from "../bank/client";
import { createRefund as postBankRefund } from "../bank/refunds-client";
import { getEntryById, markProcessing, type LedgerEntry } from "../ledger";
import { refundMerchantRefFor } from "./refund-ref";
import { settleRefund, type RefundEvidence } from "./settle-refund";
import { storeFinishedRefundResponse } from "./handle-refund-event";

export type RefundReconcileOutcome =
  | { readonly kind: "completed" | "failed" | "pending" | "fenced" }
  | { readonly kind: "anomaly"; readonly detail: string }
  /** The bank did not answer: the row is left for a later pass. */
  | { readonly kind: "bank_down"; readonly reason: string };

/**
 * Finishes `entry`, a refund row this reconciler has just taken over (its `attempt` is the reconciler's fencing
 * token), by asking the bank at `bank`. Returns what happened. Throws database errors.
 */
export async function reconcileRefundEntry(entry: LedgerEntry, bank: BankCallOptions): Promise<RefundReconcileOutcome> {
  const ref = { userId: entry.userId, entryId: entry.id };
  const topup =
    entry.refundsEntryId === null ? null : await getEntryById({ userId: entry.userId, entryId: entry.refundsEntryId });
  if (!topup?.bankChargeId) return { kind: "anomaly", detail: `refund ${entry.refId}: its top-up has no bank charge` };
  let current = entry;
  if (current.status === "initiated") {
    const moved = await markProcessing(ref, current.fencingToken, { actor: "reconciler" });
    if (moved.kind !== "moved") return { kind: "fenced" };
    current = moved.entry;
  }
  const answered = await postBankRefund(
    {
      merchantRef: refundMerchantRefFor(entry.userId, entry.refId),
      chargeId: topup.bankChargeId,
      amountMinor: entry.amountMinor,
    },
    bank,
  );
  if (answered.kind === "unknown") return { kind: "bank_down", reason: answered.reason };
  const evidence: RefundEvidence =
    answered.kind === "refund"
      ? { source: "bank", refund: answered.refund }
      : { source: "bank_refused", detail: `POST /refunds answered ${answered.status} ${answered.code}` };
  const settled = await settleRefund(current, evidence, {
    actor: "reconciler",
    guard: { kind: "lease", fencingToken: current.fencingToken },
    detail: "reconciler: the bank's answer after the lease expired",
  });
  if (settled.kind === "anomaly") return { kind: "anomaly", detail: settled.detail };
  await storeFinishedRefundResponse(settled.entry);
  if (settled.kind === "succeeded") return { kind: "completed" };
  if (settled.kind === "released") return { kind: "failed" };
  return {
    kind: settled.entry.status === "succeeded" ? "completed" : settled.entry.status === "failed" ? "failed" : "pending",
  };
}
