/**
 * What an operation (top-up, payment, reward) gives back to whichever door it came through. Expected
 * outcomes are values, not exceptions (style guide); only bugs and infrastructure failures throw.
 * lib/http maps these to responses in one place, and server actions get the same `{ status, body, replayed }`.
 */
import type { ExistingOutcome } from "./claim";
import type { CachedRun, ClaimRun } from "./claim-runner";
import type { StoredResponse } from "./entry";

export type OperationResult =
  /** The operation's first response: produced now (`replayed: false`) or stored earlier (`replayed: true`). */
  | { readonly kind: "response"; readonly response: StoredResponse; readonly replayed: boolean }
  /** Same key, other parameters: 422 idempotency_key_reused; nothing was written, reserved or moved. */
  | { readonly kind: "mismatch"; readonly fields: string[] }
  /** The winner has not stored its response within the wait: 409 request_in_progress, not stored. */
  | { readonly kind: "in_progress"; readonly retryAfterS: number }
  /**
   * Refused before any row was created (rewards: 429 daily_cap_reached, 503 cap_store_unavailable; any new
   * operation: 429 rate_limited, contract section 9; transfers: 422 recipient_unknown, transfer_to_self, section 15). `retryAfterS` becomes `Retry-After` when waiting helps.
   */
  | {
      readonly kind: "refused";
      readonly code:
        | "daily_cap_reached"
        | "cap_store_unavailable"
        | "rate_limited"
        | "recipient_unknown"
        | "transfer_to_self";
      readonly detail: string;
      readonly retryAfterS?: number;
    };

/** Maps a loser's outcome (contract section 3) to an {@link OperationResult}. */
export function fromExisting(outcome: ExistingOutcome): OperationResult {
  switch (outcome.kind) {
    case "replay":
      return { kind: "response", response: outcome.response, replayed: true };
    case "mismatch":
      return { kind: "mismatch", fields: outcome.fields };
    case "in_progress":
      return { kind: "in_progress", retryAfterS: outcome.retryAfterS };
  }
}

/**
 * Maps a claim runner's answer for an operation that answers a request (contract section 3) to an
 * {@link OperationResult}: the winner's first response (`replayed` when another door stored it first), or the
 * loser's answer from the row or from the Redis copy. Throws an Error for a winner that stored no response: an
 * operation that answers a request always stores its first response (a bug otherwise).
 */
export function fromClaimRun(run: ClaimRun<unknown> | CachedRun): OperationResult {
  if (run.kind !== "won") return fromExisting(run.outcome);
  if (!run.response) throw new Error("the winner of an operation that answers a request stored no first response");
  return { kind: "response", response: run.response, replayed: run.replayed };
}
