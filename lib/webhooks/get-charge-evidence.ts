import { cancelCharge, getCharge, type BankCallOptions } from "../bank/client";
import { isTerminal, type LedgerEntry } from "../ledger";
import type { ChargeEvidence } from "../topups/settle-topup";
import type { ChargeEvent } from "./bank-event-schema";
import type { ChargeOutcome } from "./record-webhook-event";

/** What a charge event amounts to for its row. */
export type ChargeEventEvidence =
  /** Evidence for lib/topups/settle-topup.ts. */
  | { readonly kind: "evidence"; readonly evidence: ChargeEvidence }
  /** Nothing to move and nothing to ask: the row already settled the question. Recorded with this outcome. */
  | { readonly kind: "no_move"; readonly outcome: ChargeOutcome; readonly detail: string }
  /** The bank could not be asked (answer 503, nothing changed); `reason` says why. */
  | { readonly kind: "bank_unavailable"; readonly reason: string };

/**
 * Turns a verified charge event into evidence the settlement accepts (contract section 5: an event's type is a claim).
 * A success for an unfinished row is its own evidence (signed). A success for a failed row is asked of the bank
 * first ({@link adjustmentEvidence}). A failure is a question for the bank (`GET /charges?merchantRef=`, case C14),
 * asked only while the row is unfinished: a terminal row is never moved by a failure, so asking would change
 * nothing. When the bank has no charge, the key is made unusable there first, as the reconciler does, and only its
 * confirmation fails the row. `entry` is the row the event's merchant reference names; `bank` the lookup's budget.
 * Returns `evidence`, `no_move` or `bank_unavailable`; never throws for the bank's answers.
 */
export async function getChargeEvidence(
  event: ChargeEvent,
  entry: LedgerEntry,
  bank: BankCallOptions,
): Promise<ChargeEventEvidence> {
  const { data } = event;
  if (event.type === "charge.succeeded" && entry.status === "failed") return await adjustmentEvidence(event, bank);
  if (event.type === "charge.succeeded") {
    const signed = { chargeId: data.chargeId, amountMinor: data.amount, currency: data.currency };
    return { kind: "evidence", evidence: { source: "signed_success", ...signed } };
  }
  if (isTerminal(entry.status)) {
    return entry.status === "failed"
      ? { kind: "no_move", outcome: "duplicate", detail: "the row has already failed" }
      : {
          kind: "no_move",
          outcome: "ignored_stale",
          detail: "a failure for a row that succeeded: terminal rows do not move",
        };
  }
  const looked = await getCharge(data.merchantRef, bank);
  switch (looked.kind) {
    case "found":
      return { kind: "evidence", evidence: { source: "bank", charge: looked.charge } };
    case "not_found": {
      // No charge: make the key unusable first (a request still in flight can then never charge it), as the
      // reconciler does, and fail the row only on the bank's confirmation (contract section 5).
      const cancelled = await cancelCharge(data.merchantRef, bank);
      if (cancelled.kind === "cancelled") return { kind: "evidence", evidence: { source: "key_cancelled" } };
      if (cancelled.kind === "charge_exists")
        return { kind: "evidence", evidence: { source: "bank", charge: cancelled.charge } };
      return { kind: "bank_unavailable", reason: describeBankFailure(cancelled) };
    }
    default:
      return { kind: "bank_unavailable", reason: describeBankFailure(looked) };
  }
}

/**
 * A success for a row that has already failed would be credited by an adjustment, and an adjustment credits money
 * only on the bank's own answer (contract section 5): the bank is asked for the charge first. Its `succeeded`
 * settles the row through the adjustment; anything else credits nothing and is recorded as an anomaly.
 */
async function adjustmentEvidence(event: ChargeEvent, bank: BankCallOptions): Promise<ChargeEventEvidence> {
  const looked = await getCharge(event.data.merchantRef, bank);
  if (looked.kind === "found" && looked.charge.status === "succeeded")
    return { kind: "evidence", evidence: { source: "bank", charge: looked.charge } };
  if (looked.kind === "found" || looked.kind === "not_found")
    return {
      kind: "no_move",
      outcome: "anomaly_success_for_failed_row",
      detail: `a success for a failed top-up, but the bank ${looked.kind === "found" ? `reports the charge ${looked.charge.status}` : "has no charge for it"}: nothing credited`,
    };
  return { kind: "bank_unavailable", reason: describeBankFailure(looked) };
}

/** The bank's failure to answer, as the 503's detail quotes it: `timeout`, `network: ...`, `500 internal_error`. */
function describeBankFailure(
  result: { kind: "unknown"; reason: string; detail?: string } | { kind: "rejected"; status: number; code: string },
): string {
  return result.kind === "unknown"
    ? `${result.reason}${result.detail ? `: ${result.detail}` : ""}`
    : `${result.status} ${result.code}`;
}
