/**
 * The gate in front of the bank (contract section 5, case C15): a claimed top-up is sent to the bank only when its
 * credit will have room under MAX_BALANCE_MINOR; otherwise it fails as `balance_limit_exceeded` with a stored 422,
 * and the bank is never called.
 */
import { withTransaction } from "../db";
import { env } from "../env";
import {
  failEntry,
  markProcessing,
  storeResponse,
  type LedgerEntry,
  type StoredResponse,
  type TransitionActor,
  withTransactionRetry,
} from "../ledger";
import { balanceLimitResponse, checkBalanceHeadroom } from "../wallet/check-balance-headroom";

export type AdmissionOutcome =
  /** The row is `processing` under the caller's lease: call the bank. */
  | { readonly kind: "admitted"; readonly entry: LedgerEntry }
  /** No room: the row failed (`balance_limit_exceeded`) with `response`, a 422 stored first-writer-wins. */
  | { readonly kind: "no_room"; readonly entry: LedgerEntry; readonly response: StoredResponse }
  /** The caller's lease was taken over, or the row is no longer `initiated`: the caller must not call the bank. */
  | { readonly kind: "fenced"; readonly entry: LedgerEntry };

/**
 * Moves a claimed top-up `entry` (status `initiated`, lease held with fencing token `attempt`) to `processing` only
 * when `balance + amount + the user's other unfinished top-ups <= MAX_BALANCE_MINOR`, decided under the wallet
 * row's lock in the same transaction as the move (lib/wallet/check-balance-headroom.ts), so two concurrent top-ups
 * cannot both take the same room. Without room the row fails as `balance_limit_exceeded` and its 422 problem is
 * stored in that transaction. `actor` is "request" for the live request, "reconciler" for a re-drive of a row
 * taken over before it reached the bank. Contract section 5, case C15.
 *
 * Returns `admitted`, `no_room` (with the stored response, which may be an earlier identical one) or `fenced`.
 * A retried transaction whose first run committed finds its own result: the row `processing` under the same
 * attempt counts as admitted. Throws database errors (the row then stays `initiated` for the reconciler).
 */
export async function admitTopup(
  entry: LedgerEntry,
  attempt: number,
  actor: Extract<TransitionActor, "request" | "reconciler">,
): Promise<AdmissionOutcome> {
  const maxBalanceMinor = env().MAX_BALANCE_MINOR;
  const ref = { userId: entry.userId, entryId: entry.id };
  return withTransactionRetry(() =>
    withTransaction(async (tx): Promise<AdmissionOutcome> => {
      const headroom = await checkBalanceHeadroom(tx, {
        userId: entry.userId,
        currency: entry.currency,
        amountMinor: entry.amountMinor,
        excludeEntryId: entry.id,
        maxBalanceMinor,
      });
      if (headroom.fits) {
        const moved = await markProcessing(ref, attempt, { actor, db: tx });
        // Refused but `processing` under this very attempt: an earlier run of this transaction committed.
        if (moved.kind === "moved" || (moved.entry.status === "processing" && moved.entry.attempt === attempt))
          return { kind: "admitted", entry: moved.entry };
        return { kind: "fenced", entry: moved.entry };
      }
      const failed = await failEntry(
        ref,
        {
          actor,
          guard: { kind: "lease", attempt },
          reason: "balance_limit_exceeded",
          detail: `${actor}: balance ${headroom.balanceMinor} + ${entry.amountMinor} + unfinished top-ups ${headroom.unfinishedTopupsMinor} > ${maxBalanceMinor}`,
        },
        tx,
      );
      if (failed.kind !== "moved" && failed.entry.failureReason !== "balance_limit_exceeded")
        return { kind: "fenced", entry: failed.entry };
      const stored = await storeResponse(
        ref,
        balanceLimitResponse(entry.amountMinor, entry.currency, maxBalanceMinor),
        tx,
      );
      return { kind: "no_room", entry: failed.entry, response: stored.response };
    }),
  );
}
