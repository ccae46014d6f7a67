/**
 * Settling a top-up row from what the bank says about its charge, for both directions of the reconciler. The bank
 * is the source of truth, so these transitions are guarded by status only (contract section 2), exactly like the
 * webhook's: whoever holds the lease, a row moves to a terminal state once, and the credit happens in that same
 * statement (lib/ledger/transitions.ts).
 */
import type { BankCharge } from "../bank/client";
import { merchantRefFor } from "../bank/merchant-ref";
import {
  attachCharge,
  completeEntry,
  failEntry,
  isTerminal,
  jsonStoredResponse,
  storeResponse,
  topupView,
  type LedgerEntry,
} from "../ledger";
import type { ReconcileAnomaly } from "./reconcile-result";

/** Failure reason of a top-up the bank declined (the same code the request path and the webhook write). */
export const DECLINED_REASON = "declined_by_bank";

/**
 * Failure reason of a top-up that never reached the bank and was cancelled there after the re-drive window
 * (docs/decisions/003-failure-and-recovery-policy.md); lib/web/failure-reasons.ts says it in plain words.
 */
export const EXPIRED_REASON = "expired";

export type SettleOutcome =
  /** This call moved the row to `succeeded` and credited the wallet. */
  | { readonly kind: "completed"; readonly entry: LedgerEntry }
  /** This call moved the row to `failed`. */
  | { readonly kind: "failed"; readonly entry: LedgerEntry }
  /** The charge is still pending at the bank: the row is left as it is (its charge id recorded if it had none). */
  | { readonly kind: "pending"; readonly entry: LedgerEntry }
  /** Someone else (the request, a webhook, another reconciler) already finished the row the same way. */
  | { readonly kind: "already_terminal"; readonly entry: LedgerEntry }
  /** The row and the charge disagree: nothing moved, an admin must look. */
  | { readonly kind: "anomaly"; readonly anomaly: ReconcileAnomaly; readonly entry: LedgerEntry };

function merchantRefOf(entry: LedgerEntry): string | null {
  try {
    return merchantRefFor(entry.userId, entry.refId);
  } catch {
    return null;
  }
}

function anomaly(
  entry: LedgerEntry,
  charge: BankCharge | null,
  kind: ReconcileAnomaly["kind"],
  detail: string,
): SettleOutcome {
  return {
    kind: "anomaly",
    entry,
    anomaly: { kind, merchantRef: merchantRefOf(entry), chargeId: charge?.id ?? null, detail },
  };
}

/**
 * Compares a row with the bank's charge for its key. Returns an anomaly outcome when amount, currency or the
 * recorded charge id differ (contract section 5: such an event "credits nothing, is recorded and shown to
 * admins"), else null.
 */
export function chargeMismatch(entry: LedgerEntry, charge: BankCharge): SettleOutcome | null {
  if (charge.amount !== entry.amountMinor) {
    return anomaly(
      entry,
      charge,
      "amount_mismatch",
      `the bank charged ${charge.amount} but the row is for ${entry.amountMinor}`,
    );
  }
  if (charge.currency !== entry.currency) {
    return anomaly(
      entry,
      charge,
      "currency_mismatch",
      `the bank charged in ${charge.currency} but the row is in ${entry.currency}`,
    );
  }
  if (entry.bankChargeId !== null && entry.bankChargeId !== charge.id) {
    return anomaly(
      entry,
      charge,
      "charge_mismatch",
      `the row records charge ${entry.bankChargeId}, the bank reports ${charge.id}`,
    );
  }
  return null;
}

/**
 * Moves `entry` (a top-up) as far as the bank's `charge` for its key allows, as the reconciler:
 * `succeeded` → completed with a credit; `declined` → failed (`declined_by_bank`); `pending` → left, with the
 * charge id attached when the row has none. `detail` goes into the audit row.
 *
 * Returns a {@link SettleOutcome}. A row that is already terminal is never moved again: the same terminal state
 * gives `already_terminal`, the opposite one an anomaly. Throws database errors (a 23505 on the bank-charge index
 * would be a bug: two rows claiming one charge).
 */
export async function settleEntryFromCharge(
  entry: LedgerEntry,
  charge: BankCharge,
  detail: string,
): Promise<SettleOutcome> {
  const mismatch = chargeMismatch(entry, charge);
  if (mismatch) return mismatch;
  const ref = { userId: entry.userId, entryId: entry.id };
  const guard = { kind: "status_only" } as const;

  if (charge.status === "pending") {
    if (isTerminal(entry.status)) return terminalAgainst(entry, charge);
    const attached = entry.bankChargeId === null ? await attachCharge(ref, charge.id) : null;
    return { kind: "pending", entry: attached ?? entry };
  }
  if (charge.status === "succeeded") {
    const moved = await completeEntry(ref, {
      actor: "reconciler",
      guard,
      credit: true,
      bankChargeId: charge.id,
      detail,
    });
    // `moved` means this statement, and no other, made the row succeed and credited the wallet.
    if (moved.kind === "moved") return { kind: "completed", entry: moved.entry };
    return terminalAgainst(moved.entry, charge);
  }
  const moved = await failEntry(ref, {
    actor: "reconciler",
    guard,
    reason: DECLINED_REASON,
    bankChargeId: charge.id,
    detail,
  });
  if (moved.kind === "moved") return { kind: "failed", entry: moved.entry };
  return terminalAgainst(moved.entry, charge);
}

/** A terminal row compared with the bank's word: agreeing is fine, disagreeing is an anomaly. */
function terminalAgainst(entry: LedgerEntry, charge: BankCharge): SettleOutcome {
  if (charge.status === "succeeded" && entry.status === "failed") {
    return anomaly(entry, charge, "success_for_failed_row", "the bank charged the user but the row has already failed");
  }
  if (charge.status === "declined" && entry.status === "succeeded") {
    return anomaly(
      entry,
      charge,
      "decline_for_succeeded_row",
      "the row was credited but the bank reports the charge as declined",
    );
  }
  // A pending charge for a terminal row: the row was finished from an earlier, final answer (or will be judged
  // again once the charge settles); nothing to do now.
  return { kind: "already_terminal", entry };
}

/**
 * Fails an unfinished top-up as `expired` after the bank confirmed that no charge exists for its key and none
 * ever will (`POST /charges/cancel` answered `cancelled`, or a re-drive was refused with 409
 * idempotency_key_cancelled). Returns `failed`, or `already_terminal`/anomaly when someone finished it first.
 */
export async function failEntryAsExpired(entry: LedgerEntry, detail: string): Promise<SettleOutcome> {
  const moved = await failEntry(
    { userId: entry.userId, entryId: entry.id },
    { actor: "reconciler", guard: { kind: "status_only" }, reason: EXPIRED_REASON, detail },
  );
  if (moved.kind === "moved") return { kind: "failed", entry: moved.entry };
  if (moved.entry.status === "succeeded") {
    return anomaly(
      moved.entry,
      null,
      "decline_for_succeeded_row",
      "the row was credited but the bank has no charge for its key",
    );
  }
  return { kind: "already_terminal", entry: moved.entry };
}

/**
 * Stores the first response of a finished top-up that has none, as the request would have answered:
 * 201 `{ topup: T }` (contract sections 3 and 4), first writer wins. Called for rows whose request is gone
 * (its lease expired, or the reconciler claimed the row itself), so that a retry of the original request replays
 * instead of waiting forever (case C12).
 *
 * Returns true when this call stored it; false when the row is unfinished or already had a response (the
 * earlier one stays). Throws database errors.
 */
export async function storeFinishedTopupResponse(entry: LedgerEntry): Promise<boolean> {
  if (!isTerminal(entry.status) || entry.response !== null) return false;
  const stored = await storeResponse(
    { userId: entry.userId, entryId: entry.id },
    jsonStoredResponse(201, { topup: topupView(entry) }),
  );
  return stored.stored;
}
