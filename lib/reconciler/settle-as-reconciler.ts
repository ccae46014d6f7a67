/**
 * The reconciler's settlement of a top-up from the bank's word: the one settlement function every door uses
 * (lib/topups/settle-topup.ts, docs/decisions/008), in the row's own bounded transaction, with what the pass notes of
 * it and, for a row whose request is gone, its stored first response (case C12).
 */
import type { LedgerEntry } from "../ledger";
import { settleTopup, type ChargeEvidence, type SettlementOutcome } from "../topups/settle-topup";
import { storeFinishedTopupResponse } from "../topups/topup-response";
import { note, type PassContext } from "./pass-context";
import type { PassOutcome } from "./reconcile-result";
import { inRowTransaction } from "./row-guard";

/** How {@link settleAsReconciler} settles a row, and what it does after. */
export interface ReconcilerSettlement {
  /** Goes on the row's audit transition: where the bank's word came from. */
  readonly detail: string;
  /** Store the row's first response once it is finished: its request is gone (contract section 3, case C12). */
  readonly storeResponse: boolean;
  /** A charge still pending leaves the row (`left`); false when the pass counts the row otherwise (a re-drive). */
  readonly pendingLeft: boolean;
}

/**
 * Settles `entry` from `evidence` (the bank's word) as the reconciler: status-only guard, the bank is the source of
 * truth. Runs in the row's own transaction, whose statements are bounded by `pass.rowStatementTimeoutMs` (a credit
 * waiting on a wallet locked elsewhere gives up after it, case C29); a failure is counted on the row by the caller's
 * guard (./isolate-row.ts `isolateRow`), once, after the rollback (settleTopup counts nothing when given the
 * transaction). Notes what it came to (`completed` for a credit or an adjustment, `failed`, or `left`, with the
 * settlement's anomaly when there is one) and, when asked and the row is finished, stores its first response.
 * Returns the settlement's outcome. Throws database errors.
 */
export async function settleAsReconciler(
  pass: PassContext,
  entry: LedgerEntry,
  evidence: ChargeEvidence,
  settlement: ReconcilerSettlement,
): Promise<SettlementOutcome> {
  const outcome = await inRowTransaction(pass.rowStatementTimeoutMs, (db) =>
    settleTopup(entry, evidence, {
      actor: "reconciler",
      guard: { kind: "status_only" },
      detail: settlement.detail,
      db,
    }),
  );
  const noted = passOutcomeOf(outcome, settlement.pendingLeft);
  if (noted) note(pass, noted);
  if (settlement.storeResponse && outcome.kind !== "anomaly") await storeFinishedTopupResponse(outcome.entry);
  return outcome;
}

/** What the pass notes of a settlement; null for a pending charge the pass counts otherwise. */
function passOutcomeOf(outcome: SettlementOutcome, pendingLeft: boolean): PassOutcome | null {
  switch (outcome.kind) {
    case "credited":
    case "adjusted":
      return { kind: "completed" };
    case "failed":
      return { kind: "failed" };
    case "pending":
      return pendingLeft ? { kind: "left" } : null;
    case "unchanged":
      return { kind: "left" };
    case "anomaly":
      return { kind: "left", anomaly: outcome.anomaly };
  }
}
