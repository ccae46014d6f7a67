/**
 * The claim runner: the one way every entry type is claimed (contract sections 1, 3 and 8; docs/decisions/040 and
 * 053): top-ups, payments, rewards, refunds, adjustments, chargebacks and their reversals, and the reconciler's claim
 * of a succeeded charge's missing row. The runner owns what each of them does the same way: the Redis replay copy
 * (read before the claim, written after the first response), a lease owner per run, the bounded retry of the whole
 * attempt, commit uncertainty, the own-lost-claim check, the loser's wait for the winner's stored response, and the
 * one "claimed row vanished" error. An operation supplies only its decision: the statement or transaction that claims
 * and decides (`decided`), or that claims and hands back the fresh row for work with an outside call (`claimed`, then
 * the operation's `finish`: the bank's charge of a top-up or a refund, made after the claim has committed).
 */
import { env } from "../env";
import { findEntryByKey, type ExistingOutcome } from "./claim";
import type { LedgerEntry, StoredResponse } from "./entry";
import { fingerprint, differingFields, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import type { Queryable } from "./queryable";
import { cacheStoredResponse, readCachedReplay, type CachedOutcome } from "./replay-cache";
import { withTransactionRetry } from "./retry";
import type { TransitionOutcome } from "./transitions";
import { newLeaseOwner } from "./worker";

/** An abandoned decision with what it found, for operations that can abandon: none when `A` is `never`. */
type Abandoned<A> = [A] extends [never] ? never : { readonly kind: "abandoned"; readonly detail: A };

/** What one attempt of an operation ended with (`T`: what the decision found; `A`: what an abandon found). */
export type ClaimAttempt<T, A = never> =
  /**
   * This attempt claimed the key and decided in the same commit (the row is terminal). `response` is the first
   * response it stored, null for an entry that stores none (an adjustment, a dispute's entry).
   */
  | { readonly kind: "decided"; readonly response: StoredResponse | null; readonly detail: T }
  /**
   * This attempt claimed the key and committed the fresh, unfinished row: the work goes on outside the database (a
   * bank call) in the operation's `finish`.
   */
  | { readonly kind: "claimed"; readonly entry: LedgerEntry }
  /**
   * Nothing written: the decision rolled its claim back (a reward past the PostgreSQL cap), or a check refused before
   * any claim. With `unlessKeyTaken`, the refusal stands only while the key has no row: a row answers first, as to a
   * loser (contract section 9's order: the key before the operation's own checks; a refund of a top-up that is not
   * refundable).
   */
  | ([A] extends [never]
      ? never
      : { readonly kind: "abandoned"; readonly detail: A; readonly unlessKeyTaken?: boolean })
  /** The key already had a row (another request's, or this run's own earlier attempt's). Nothing written. */
  | { readonly kind: "lost" };

/** What the runner hands each attempt. */
export interface AttemptContext {
  /** This run's lease owner, the same for every attempt: the operation's, or a fresh one (worker.ts `newLeaseOwner`). */
  readonly leaseOwner: string;
  /**
   * Call right before the attempt's writes may commit (the transaction's body finished; or the single statement is
   * about to be sent). From then on a failure cannot prove that nothing landed ({@link CommitUncertainError}).
   * Operations that answer a request call it (a reward releases its reservation by it); an entry applied from the
   * bank's word (an adjustment, a dispute's entry, the reconciler's missing row) need not: its door applies the
   * bank's word again after any failure, and reports the database's own error.
   */
  readonly mayCommit: () => void;
}

/** What an operation's `finish` ends with. */
export interface FinishedClaim<T> {
  /** The row's first response as stored now (the runner writes its Redis copy); null when the operation stores none. */
  readonly response: StoredResponse | null;
  /** True when another door (the reconciler) stored `response` first: the answer is then a replay. */
  readonly replayed: boolean;
  readonly detail: T;
}

/**
 * What the runner does with the key's Redis replay copy (replay-cache.ts) before the claim:
 *  - `read`: reads it; a copy answers the run without the ledger (`cached`);
 *  - `read_by_caller`: the caller has just read it (lib/limits/new-operation-rate.ts `gateNewOperation`), or has read
 *    the key's row itself (a reward);
 *  - `none`: the caller acts on the row, not on a response (an adjustment, a dispute's entry, the reconciler): no
 *    copy is read, and a loser's replay does not refresh one.
 */
export type ReplayCopyUse = "read" | "read_by_caller" | "none";

/** An operation for {@link runClaimedOperation}. */
export interface ClaimedOperation<T, A = never> {
  readonly key: OperationKey;
  /** The fingerprinted parameters (what a loser compares, contract section 3). */
  readonly params: OperationParams;
  readonly replayCopy: ReplayCopyUse;
  /**
   * One whole attempt: one transaction from BEGIN to COMMIT, or one autocommit statement, with no effect outside the
   * database (the runner may run it again after a conflict or a lost connection; lib/ledger/retry.ts). With `db`, the
   * attempt's statements on that open transaction.
   */
  readonly attempt: (context: AttemptContext) => Promise<ClaimAttempt<T, A>>;
  /**
   * The work after a `claimed` attempt committed (the bank's call, the settlement, the stored first response); also
   * run on this run's own claim found after a lost connection. Required when the attempt can answer `claimed`.
   */
  readonly finish?: (entry: LedgerEntry) => Promise<FinishedClaim<T>>;
  /**
   * How long a loser waits for the winner's stored response, in ms. Default IDEMPOTENCY_WAIT_MS; 0 reads the row once
   * (entries born terminal that store no response; the reconciler, which must not wait).
   */
  readonly waitMs?: number;
  /** The lease owner written on a claimed row. Default: a fresh one per run. The reconciler's is its worker id. */
  readonly leaseOwner?: string;
  /**
   * The caller's open transaction (the webhook records its event in the same commit): the attempt runs once, the
   * caller retries its whole transaction, and a loser reads the row on it. Default: the pool, the attempt retried.
   */
  readonly db?: Queryable;
}

/** What {@link runClaimedOperation} returns. */
export type ClaimRun<T, A = never> =
  /**
   * This run claimed the key: what its decision (or `finish`) found, and the operation's first response (null for
   * entries that store none), `replayed` when another door stored it first.
   */
  | {
      readonly kind: "won";
      readonly response: StoredResponse | null;
      readonly replayed: boolean;
      readonly detail: T;
    }
  /** Only for operations that can abandon (`A` is not `never`): nothing written. */
  | Abandoned<A>
  /**
   * The key had a row: `outcome` is the loser's answer (replay, mismatch, in progress) and `entry` the row as last
   * read (its status tells a caller whether the winner's money movement landed).
   */
  | { readonly kind: "existing"; readonly outcome: ExistingOutcome; readonly entry: LedgerEntry };

/** With `replayCopy: "read"`, the Redis copy may answer: a replay or a mismatch, without the row. */
export type CachedRun = { readonly kind: "cached"; readonly outcome: CachedOutcome };

/** Some attempt's writes may have committed, but the call failed: whether the operation landed is unknown. */
export class CommitUncertainError extends Error {
  constructor(key: OperationKey, cause: unknown) {
    super(`${key.type} ${key.refId}: the attempt may have committed before it failed`, { cause });
    this.name = "CommitUncertainError";
  }
}

/**
 * Runs `operation` once per key (contract sections 1, 3 and 8):
 *  1. with `replayCopy: "read"`, the key's Redis copy first: a copy answers `cached`;
 *  2. the attempt, retried as a whole after a serialization failure, a deadlock or a lost connection (once, on the
 *     caller's `db`);
 *  3. `decided`: the winner's first response gets its Redis copy; `claimed`: the operation's `finish` runs on the fresh
 *     row, and its response gets the copy;
 *  4. `lost`: the key's row is read in its own statement. A run whose attempt ran more than once and finds its own
 *     lease owner on the row, no response stored and its own fingerprint, is the winner whose commit's answer was
 *     lost with the connection: it carries on with `finish`. Any other run is a loser: it waits up to `waitMs` for
 *     the winner's stored response ({@link awaitStoredEntry}: replay, mismatch or in progress).
 *
 * Returns `won`, `abandoned` (nothing written), `existing`, or `cached` (only with `replayCopy: "read"`).
 * Throws {@link CommitUncertainError} when an attempt may have committed and the call still failed, the attempt's
 * error unchanged when none may have, what `finish` throws, and an Error when the key's row vanished (rows are never
 * deleted: a bug) or an attempt answered `claimed` for an operation without `finish` (a bug).
 */
export function runClaimedOperation<T, A = never>(
  operation: ClaimedOperation<T, A> & { readonly replayCopy: "read" },
): Promise<ClaimRun<T, A> | CachedRun>;
export function runClaimedOperation<T, A = never>(
  operation: ClaimedOperation<T, A> & { readonly replayCopy: "read_by_caller" | "none" },
): Promise<ClaimRun<T, A>>;
export function runClaimedOperation<T, A = never>(
  operation: ClaimedOperation<T, A>,
): Promise<ClaimRun<T, A> | CachedRun>;
export async function runClaimedOperation<T, A = never>(
  operation: ClaimedOperation<T, A>,
): Promise<ClaimRun<T, A> | CachedRun> {
  if (operation.replayCopy === "read") {
    // Hot replays are answered from the Redis copy of the stored response when there is one (replay-cache.ts).
    const cached = await readCachedReplay(operation.key, operation.params);
    if (cached) return { kind: "cached", outcome: cached };
  }
  const leaseOwner = operation.leaseOwner ?? newLeaseOwner();
  const { attempt, attempts } = await runAttempt(operation, leaseOwner);
  const run = { leaseOwner, retried: attempts > 1 };
  switch (attempt.kind) {
    case "decided":
      return won(operation, { response: attempt.response, replayed: false, detail: attempt.detail });
    case "claimed":
      return won(operation, await finishClaim(operation, attempt.entry));
    case "abandoned": {
      // Nothing was claimed. With `unlessKeyTaken`, a row under the key answers first.
      const entry = attempt.unlessKeyTaken ? await findEntryByKey(operation.key, operation.db) : null;
      return entry
        ? answerTakenKey(operation, entry, run)
        : ({ kind: "abandoned", detail: attempt.detail } as Abandoned<A>);
    }
    case "lost":
      // The claim saw the key taken: its row is read in a separate statement (a fresh snapshot, contract section 1).
      return answerTakenKey(operation, await findClaimedEntry(operation.key, operation.db), run);
  }
}

/** Runs the operation's attempt: once on the caller's transaction, else retried (retry.ts). Counts the runs. */
async function runAttempt<T, A>(
  operation: ClaimedOperation<T, A>,
  leaseOwner: string,
): Promise<{ attempt: ClaimAttempt<T, A>; attempts: number }> {
  // Sticky across attempts: once any attempt may have committed, a later failure cannot prove nothing landed.
  let mayHaveCommitted = false;
  let attempts = 0;
  const context: AttemptContext = {
    leaseOwner,
    mayCommit: () => {
      mayHaveCommitted = true;
    },
  };
  const once = () => {
    attempts += 1;
    return operation.attempt(context);
  };
  try {
    // Never a retry inside an open transaction: the caller's own retry runs its whole transaction again.
    const attempt = operation.db ? await once() : await withTransactionRetry(once);
    return { attempt, attempts };
  } catch (error) {
    if (mayHaveCommitted) throw new CommitUncertainError(operation.key, error);
    throw error;
  }
}

/** The winner's answer; its first response gets its Redis copy (unless the operation keeps none). */
async function won<T, A>(operation: ClaimedOperation<T, A>, finished: FinishedClaim<T>): Promise<ClaimRun<T, A>> {
  if (finished.response && operation.replayCopy !== "none")
    await cacheStoredResponse(operation.key, operation.params, finished.response);
  return { kind: "won", ...finished };
}

/** Runs the operation's `finish` on its own fresh claim. */
function finishClaim<T, A>(operation: ClaimedOperation<T, A>, entry: LedgerEntry): Promise<FinishedClaim<T>> {
  if (!operation.finish) {
    const { type, refId } = operation.key;
    throw new Error(`${type} ${refId}: an attempt claimed the key, and the operation has no finish`);
  }
  return operation.finish(entry);
}

/**
 * The answer for a key whose row `entry` was just read: this run's own claim (see {@link isOwnClaim}) carries on
 * with `finish`; any other run is a loser and waits for the winner's stored response.
 */
async function answerTakenKey<T, A>(
  operation: ClaimedOperation<T, A>,
  entry: LedgerEntry,
  run: { readonly leaseOwner: string; readonly retried: boolean },
): Promise<ClaimRun<T, A>> {
  if (run.retried && isOwnClaim(entry, operation.key, operation.params, run.leaseOwner))
    return won(operation, await finishClaim(operation, entry));
  const existing = await awaitStoredEntry(entry, operation.params, {
    waitMs: operation.waitMs,
    db: operation.db,
    refreshReplayCopy: operation.replayCopy !== "none",
  });
  return { kind: "existing", ...existing };
}

/**
 * True when `entry` is this run's own claim: an earlier attempt's commit succeeded but its answer was lost with the
 * connection, and the retried attempt found the key taken. Its lease owner is the run's, no response is stored yet
 * and its fingerprint is the operation's. Asked only of a run whose attempt ran more than once: a lease owner shared
 * by several runs (the reconciler's worker id) is evidence of this run's own commit only then. Not its own: a row the
 * reconciler took over (another lease owner), a terminal row (no lease owner), a row with a stored response (a
 * replay, whoever asks).
 */
function isOwnClaim(entry: LedgerEntry, key: OperationKey, params: OperationParams, leaseOwner: string): boolean {
  if (entry.leaseOwner !== leaseOwner || entry.response !== null) return false;
  return entry.fingerprint === fingerprint(key.type, params);
}

/**
 * The row of `key`, read in its own statement on `db` (default: the pool), for a key that has one. Throws the one
 * "claimed row vanished" Error when there is none: the key was seen taken, and rows are never deleted (contract
 * section 2), so that is a bug.
 */
async function findClaimedEntry(key: OperationKey, db?: Queryable): Promise<LedgerEntry> {
  const entry = await findEntryByKey(key, db);
  if (!entry) throw new Error(`${key.type} ${key.refId}: claimed row vanished`);
  return entry;
}

/** Polling schedule of a waiting loser: starts at 10 ms (a fast winner finishes in a few ms) and doubles
 * up to 200 ms, so 1000 waiting duplicates cost at most ~5 reads per second each. */
const WAIT_FIRST_MS = 10;
const WAIT_MAX_STEP_MS = 200;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** How {@link awaitStoredEntry} waits. */
export interface LoserWait {
  /** The longest wait for the winner's response, in ms. Default IDEMPOTENCY_WAIT_MS; 0 answers from `first` alone. */
  readonly waitMs?: number;
  /** Where the row is read again while waiting (the caller's open transaction). Default: the pool. */
  readonly db?: Queryable;
  /** Write the Redis copy of a replayed response (replay-cache.ts). Default true. */
  readonly refreshReplayCopy?: boolean;
}

/**
 * The loser's path (contract section 3) for a key whose row `first` was just read: compares fingerprints first (so a
 * mismatch is refused even while the winner is still running), then replays the stored response, reading the row
 * again, on `wait.db`, until the winner stores it or `wait.waitMs` has passed. Holds no transaction of its own and no
 * connection while waiting.
 *
 * Returns the outcome, `replay` (the response's Redis copy refreshed unless `wait.refreshReplayCopy` is false),
 * `mismatch` (with the differing field names) or `in_progress` (Retry-After seconds), and the row as last read (its
 * status says whether the winner's money movement landed). Throws database errors, and the "claimed row vanished"
 * Error when a read finds no row.
 */
export async function awaitStoredEntry(
  first: LedgerEntry,
  params: OperationParams,
  wait: LoserWait = {},
): Promise<{ readonly outcome: ExistingOutcome; readonly entry: LedgerEntry }> {
  const key: OperationKey = { userId: first.userId, type: first.type, refId: first.refId };
  const expected = fingerprint(key.type, params);
  const deadline = Date.now() + (wait.waitMs ?? env().IDEMPOTENCY_WAIT_MS);
  let stepMs = WAIT_FIRST_MS;
  for (let entry = first; ; entry = await findClaimedEntry(key, wait.db)) {
    if (entry.fingerprint !== expected) {
      return { outcome: { kind: "mismatch", fields: differingFields(entry.params, params) }, entry };
    }
    if (entry.response) {
      if (wait.refreshReplayCopy ?? true) await cacheStoredResponse(key, params, entry.response);
      return { outcome: { kind: "replay", response: entry.response }, entry };
    }
    const remainingMs = deadline - Date.now();
    if (remainingMs <= 0) {
      // One second: the winner is alive (or its lease will expire and the reconciler finishes the row);
      // a client retrying after a second either replays or waits again, and never runs the work twice.
      return { outcome: { kind: "in_progress", retryAfterS: 1 }, entry };
    }
    await sleep(Math.min(stepMs, remainingMs));
    stepMs = Math.min(stepMs * 2, WAIT_MAX_STEP_MS);
  }
}

/**
 * The row of a transition on a fresh claim. The row was inserted by this transaction and nobody else can see it
 * yet, so its lease guard cannot refuse: `not_moved` is a bug and throws an Error naming `operation`.
 */
export function movedOrThrow(outcome: TransitionOutcome, operation: string): LedgerEntry {
  if (outcome.kind !== "moved") throw new Error(`${operation}: the fresh claim's transition did not move the row`);
  return outcome.entry;
}
