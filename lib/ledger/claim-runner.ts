/**
 * The claim runner: one way to run an operation that is decided by the ledger alone, with no outside call
 * (payments, rewards; contract sections 1, 3 and 8). The runner owns what every such operation does the same way:
 * a lease owner per request, the bounded retry of the whole attempt, the claim, the stored first response, the
 * Redis replay copy of it, and the loser's wait for the winner's response. An operation supplies only its decision:
 * either a body run inside the claim's transaction ({@link decideInClaimTransaction}), or its own transaction whose
 * one statement claims and decides at once (lib/ledger/payment-statement.ts).
 */
import { withTransaction } from "../db";
import { awaitStoredEntry, type ClaimRequest, type ExistingOutcome, insertClaimOrLose } from "./claim";
import type { LedgerEntry, StoredResponse } from "./entry";
import type { OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import type { Queryable } from "./queryable";
import { cacheStoredResponse } from "./replay-cache";
import { withTransactionRetry } from "./retry";
import { type EntryRef, storeResponse, type TransitionGuard, type TransitionOutcome } from "./transitions";
import { newLeaseOwner } from "./worker";

/** An abandoned decision with what it found, for operations that can abandon: none when `A` is `never`. */
type Abandoned<A> = [A] extends [never] ? never : { readonly kind: "abandoned"; readonly detail: A };

/** What one attempt of an operation ended with (`T`: what a decision found; `A`: what an abandon found). */
export type ClaimAttempt<T, A = never> =
  /** This attempt claimed the key, decided, and stored `response` as the operation's first response. */
  | { readonly kind: "decided"; readonly response: StoredResponse; readonly detail: T }
  /** This attempt claimed the key but its decision rolled everything back: no row, nothing stored. */
  | Abandoned<A>
  /** The key already had a row (another request's, or this request's own earlier attempt's). Nothing written. */
  | { readonly kind: "lost" };

/** What the runner hands each attempt. */
export interface AttemptContext {
  /** This request's lease owner (the same for every attempt: lib/ledger/worker.ts `newLeaseOwner`). */
  readonly leaseOwner: string;
  /**
   * Call right before the attempt's writes may commit (the transaction's body finished; or the single statement is
   * about to be sent). From then on a failure cannot prove that nothing landed ({@link CommitUncertainError}).
   */
  readonly mayCommit: () => void;
}

/** An operation for {@link runClaimedOperation}. */
export interface ClaimedOperation<T, A = never> {
  readonly key: OperationKey;
  /** The fingerprinted parameters (what a loser compares, contract section 3). */
  readonly params: OperationParams;
  /**
   * One whole attempt: one transaction from BEGIN to COMMIT, or one autocommit statement, with no effect outside the
   * database (the runner may run it again after a conflict or a lost connection; lib/ledger/retry.ts).
   */
  readonly attempt: (context: AttemptContext) => Promise<ClaimAttempt<T, A>>;
  /** How long a loser waits for the winner's stored response, in ms. Default IDEMPOTENCY_WAIT_MS. */
  readonly waitMs?: number;
}

/** What {@link runClaimedOperation} returns. */
export type ClaimedOperationOutcome<T, A = never> =
  | { readonly kind: "decided"; readonly response: StoredResponse; readonly detail: T }
  /** Only for operations that can abandon (`A` is not `never`). */
  | Abandoned<A>
  /**
   * The key had a row: `outcome` is the loser's answer (replay, mismatch, in progress) and `entry` the row as last
   * read (its status tells a caller whether the winner's money movement landed).
   */
  | { readonly kind: "existing"; readonly outcome: ExistingOutcome; readonly entry: LedgerEntry };

/** Some attempt's writes may have committed, but the call failed: whether the operation landed is unknown. */
export class CommitUncertainError extends Error {
  constructor(key: OperationKey, cause: unknown) {
    super(`${key.type} ${key.refId}: the attempt may have committed before it failed`, { cause });
    this.name = "CommitUncertainError";
  }
}

/**
 * Runs `operation` once per key (contract sections 1, 3 and 8): its attempt, retried as a whole after a
 * serialization failure, a deadlock or a lost connection; then, for the winner, the Redis copy of the stored first
 * response (replay-cache.ts), and for a loser, the wait for the winner's stored response (claim.ts
 * `awaitStoredResponse`: replay, mismatch or in progress). A loser is also the request whose own earlier attempt
 * committed before its connection died: it replays its own response.
 *
 * Returns `decided` (the first response, stored now), `abandoned` (the decision rolled back; nothing written) or
 * `existing`. Throws {@link CommitUncertainError} when an attempt may have committed and the call still failed,
 * the attempt's error unchanged when none may have, and an Error when the key's row vanished (rows are never
 * deleted: a bug).
 */
export async function runClaimedOperation<T, A = never>(
  operation: ClaimedOperation<T, A>,
): Promise<ClaimedOperationOutcome<T, A>> {
  const { key, params } = operation;
  const leaseOwner = newLeaseOwner();
  // Sticky across attempts: once any attempt may have committed, a later failure cannot prove nothing landed.
  let mayHaveCommitted = false;
  const context: AttemptContext = {
    leaseOwner,
    mayCommit: () => {
      mayHaveCommitted = true;
    },
  };
  let attempt: ClaimAttempt<T, A>;
  try {
    attempt = await withTransactionRetry(() => operation.attempt(context));
  } catch (error) {
    if (mayHaveCommitted) throw new CommitUncertainError(key, error);
    throw error;
  }
  if (attempt.kind === "decided") {
    await cacheStoredResponse(key, params, attempt.response);
    return attempt;
  }
  if (attempt.kind === "abandoned") return attempt;
  const existing = await awaitStoredEntry(key, params, operation.waitMs);
  // The claim saw the key taken, then the row read as absent: only a deleted row does that, and rows are never
  // deleted (contract section 2).
  if (!existing) throw new Error(`${key.type} ${key.refId}: claimed row vanished`);
  return { kind: "existing", outcome: existing.outcome, entry: existing.entry };
}

/** The freshly claimed row a decision works on, with what its transitions need. */
export interface FreshClaim {
  readonly entry: LedgerEntry;
  readonly ref: EntryRef;
  /** The lease guard of the claim (fencing token `attempt` 1). */
  readonly guard: TransitionGuard;
}

/** What a decision inside the claim's transaction ends with. */
export type TransactionDecision<T, A = never> =
  /** Store `response` as the first response and commit. */
  | { readonly kind: "store"; readonly response: StoredResponse; readonly detail: T }
  /** Roll the whole transaction back, the claim with it (e.g. a 429 that must leave no row, contract section 3). */
  | { readonly kind: "abandon"; readonly detail: A };

/** Carries an `abandon` decision out of the transaction, rolling it back. */
class AbandonSignal extends Error {
  constructor(readonly detail: unknown) {
    super();
  }
}

/**
 * An attempt for {@link runClaimedOperation} that claims `request.key` in a READ COMMITTED transaction, runs
 * `decide` on the fresh row in the same transaction, stores the response it returns and commits (or rolls back
 * for `abandon`). `request` is a {@link ClaimRequest} without its lease owner (the runner's). `decide` must move the
 * row to its terminal state itself (completeEntry/failEntry on `tx`, checked with {@link movedOrThrow}) and must not
 * call anything outside the database.
 * The attempt returns `lost` when the key already had a row (a unique violation of the claim index counts as lost,
 * contract section 8). Throws what `decide` or the database throws.
 */
export function decideInClaimTransaction<T, A = never>(
  request: Omit<ClaimRequest, "leaseOwner">,
  decide: (tx: Queryable, claim: FreshClaim) => Promise<TransactionDecision<T, A>>,
): (context: AttemptContext) => Promise<ClaimAttempt<T, A>> {
  return async (context) => {
    try {
      return await withTransaction(async (tx): Promise<ClaimAttempt<T, A>> => {
        const entry = await insertClaimOrLose(tx, { ...request, leaseOwner: context.leaseOwner });
        // No row back: another request holds the key and has committed (contract section 1). Not a result.
        if (!entry) return { kind: "lost" };
        const ref = { userId: entry.userId, entryId: entry.id };
        const decision = await decide(tx, { entry, ref, guard: { kind: "lease", attempt: entry.attempt } });
        if (decision.kind === "abandon") throw new AbandonSignal(decision.detail);
        const stored = (await storeResponse(ref, decision.response, tx)).response;
        context.mayCommit();
        return { kind: "decided", response: stored, detail: decision.detail };
      });
    } catch (error) {
      // The detail came from this call's own `decide`, whose abandon type is A.
      if (error instanceof AbandonSignal) return { kind: "abandoned", detail: error.detail } as Abandoned<A>;
      throw error;
    }
  };
}

/**
 * The row of a transition on a fresh claim. The row was inserted by this transaction and nobody else can see it
 * yet, so its lease guard cannot refuse: `not_moved` is a bug and throws an Error naming `operation`.
 */
export function movedOrThrow(outcome: TransitionOutcome, operation: string): LedgerEntry {
  if (outcome.kind !== "moved") throw new Error(`${operation}: the fresh claim's transition did not move the row`);
  return outcome.entry;
}
