/**
 * The reconciler's work on a payout row left in flight (contract section 14; docs/decisions/060): a row whose lease
 * expired (its request crashed, stalled or lost the bank's answer: outcome unknown) is driven to the end by asking the
 * bank again with the same key. A repeat of `POST /payouts` with the row's merchant reference makes no second payout:
 * the bank answers the payout the request made, or makes the one the request never got to make (the money is already
 * held for it). Its answer is settled like the request's. No answer leaves the row as it is, money held: a payout is
 * never failed or released on a timer, only on the bank's word.
 */
import type { BankCallOptions } from "../bank/client";
import { payoutMerchantRefFor } from "../bank/merchant-ref";
import { createPayout as postBankPayout } from "../bank/payouts-client";
import { isTerminal, markProcessing, type LedgerEntry } from "../ledger";
import { settlePayout, storePayoutResponse, type PayoutEvidence } from "./settle-payout";

export type PayoutReconcileOutcome =
  | { readonly kind: "completed" | "failed" | "pending" | "fenced" }
  | { readonly kind: "anomaly"; readonly detail: string }
  /** The bank did not answer: the row is left, money held, for a later pass. */
  | { readonly kind: "bank_down"; readonly reason: string };

/**
 * Finishes `entry`, a payout row this reconciler has just taken over (its `attempt` is the reconciler's fencing
 * token), by asking the bank at `bank` with the row's own key. Returns what happened. Throws database errors.
 */
export async function reconcilePayoutEntry(entry: LedgerEntry, bank: BankCallOptions): Promise<PayoutReconcileOutcome> {
  let current = entry;
  if (current.status === "initiated") {
    const moved = await markProcessing({ userId: entry.userId, entryId: entry.id }, current.fencingToken, {
      actor: "reconciler",
    });
    if (moved.kind !== "moved") return { kind: "fenced" };
    current = moved.entry;
  }
  const answered = await postBankPayout(
    {
      merchantRef: payoutMerchantRefFor(entry.userId, entry.refId),
      amountMinor: entry.amountMinor,
      currency: entry.currency,
      destination: String(entry.params.destination),
    },
    bank,
  );
  if (answered.kind === "unknown") return { kind: "bank_down", reason: answered.reason };
  if (answered.kind === "rejected" && answered.code === "idempotency_key_reused")
    return {
      kind: "anomaly",
      detail: `payout ${entry.refId}: the bank holds another payout under its merchant reference`,
    };
  const evidence: PayoutEvidence =
    answered.kind === "payout"
      ? { source: "bank", payout: answered.payout }
      : { source: "bank_refused", detail: `POST /payouts answered ${answered.status} ${answered.code}` };
  const settled = await settlePayout(current, evidence, {
    actor: "reconciler",
    guard: { kind: "lease", fencingToken: current.fencingToken },
    detail: "reconciler: the bank's answer after the lease expired",
  });
  if (settled.kind === "anomaly") return { kind: "anomaly", detail: settled.detail };
  if (isTerminal(settled.entry.status) && settled.entry.response === null) await storePayoutResponse(settled.entry);
  const status = settled.entry.status;
  return { kind: status === "succeeded" ? "completed" : status === "failed" ? "failed" : "pending" };
}
