/**
 * The gate in front of the bank (contract section 5, case C15): a claimed top-up is sent to the bank only when its
 * credit will have room under MAX_BALANCE_MINOR; otherwise it fails as `balance_limit_exceeded` with a stored 422,
 * and the bank is never called.
 */
import { retryingPool } from "../db";
import { env } from "../env";
import {
  admitTopupUnderWalletLock,
  type LedgerEntry,
  type Queryable,
  type StoredResponse,
  type TopupCeiling,
  type TransitionActor,
} from "../ledger";
import { balanceLimitResponse } from "../wallet/balance-limit-response";

export type AdmissionOutcome =
  /** The row is `processing` under the caller's lease: call the bank. */
  | { readonly kind: "admitted"; readonly entry: LedgerEntry }
  /** No room: the row failed (`balance_limit_exceeded`) with `response`, a 422 stored first-writer-wins. */
  | { readonly kind: "no_room"; readonly entry: LedgerEntry; readonly response: StoredResponse }
  /** The caller's lease was taken over, or the row is no longer `initiated`: the caller must not call the bank. */
  | { readonly kind: "fenced"; readonly entry: LedgerEntry };

/**
 * Moves a claimed top-up `entry` (status `initiated`, lease held with fencing token `attempt`) to `processing` only
 * when `balance + amount + the user's other pending credits <= MAX_BALANCE_MINOR`, decided under the wallet
 * row's lock in the same statement as the move (lib/ledger/topup-admission.ts, one round trip), so two concurrent
 * top-ups cannot both take the same room. Without room the row fails as `balance_limit_exceeded` and its 422 problem
 * is stored in that statement. `actor` is "request" for the live request, "reconciler" for a re-drive of a row
 * taken over before it reached the bank. Contract section 5, case C15.
 *
 * Returns `admitted`, `no_room` (with the stored response, which may be an earlier identical one) or `fenced`, read
 * from the row as the statement left it. A statement retried after a lost connection whose first run committed
 * finds its own result: the row `processing` under the same attempt counts as admitted, failed for the ceiling as
 * no room. Throws database errors (the row then stays `initiated` for the reconciler). `db`: where the statement
 * runs, autocommit on the pool by default; the reconciler passes its row's transaction, whose statement timeout
 * bounds the wait for the wallet's lock (lib/reconciler/row-guard.ts, case C29).
 */
export async function admitTopup(
  entry: LedgerEntry,
  fencingToken: number,
  actor: Extract<TransitionActor, "request" | "reconciler">,
  db: Queryable = retryingPool(),
): Promise<AdmissionOutcome> {
  const row = await admitTopupUnderWalletLock(db, {
    ref: { userId: entry.userId, entryId: entry.id },
    amountMinor: entry.amountMinor,
    currency: entry.currency,
    fencingToken,
    actor,
    ...topupCeiling(entry.amountMinor, entry.currency),
  });
  return admissionOf(row, fencingToken);
}

/** MAX_BALANCE_MINOR and the 422 a top-up of `amountMinor` (minor units of `currency`) stores when it has no room. */
export function topupCeiling(amountMinor: number, currency: string): TopupCeiling {
  const maxBalanceMinor = env().MAX_BALANCE_MINOR;
  return { maxBalanceMinor, refusal: balanceLimitResponse(amountMinor, currency, maxBalanceMinor) };
}

/**
 * The admission a top-up `row` records, as an admission left it for the lease holder with fencing token `attempt`:
 * `processing` under that attempt is admitted; `failed` for `balance_limit_exceeded` (its 422 stored) had no room;
 * anything else is fenced (taken over, or no longer unfinished). Pure.
 */
export function admissionOf(row: LedgerEntry, fencingToken: number): AdmissionOutcome {
  if (row.status === "processing" && row.fencingToken === fencingToken) return { kind: "admitted", entry: row };
  if (row.status === "failed" && row.failureReason === "balance_limit_exceeded" && row.response)
    return { kind: "no_room", entry: row, response: row.response };
  return { kind: "fenced", entry: row };
}
