/**
 * Bounded retry of whole transactions that PostgreSQL aborted for a serialization failure (40001) or a deadlock
 * (40P01), contract section 8, or that lost their connection in a failover (connection errors, 57P01, 57P03,
 * 25006: docs/decisions/015-failover-and-poolers.md). Every other error is rethrown at once, unchanged.
 */
import { env } from "../env";
import { log } from "../log";
import { classifyDbError, type RetryableSqlstate } from "./db-errors";

/**
 * Attempts in total (the first run plus two retries). A 40001 or 40P01 means another transaction won a conflict
 * over the same rows; it has committed or rolled back by the time we retry, so the second attempt almost always
 * succeeds and a third covers one more collision with a different peer. Beyond that the row is persistently hot,
 * and holding the request longer only queues more work behind it: the error goes to the caller (a 500), as the
 * contract's "a bounded number of times" asks.
 */
export const TRANSACTION_RETRY_ATTEMPTS_DEFAULT = 3;

/** Upper bound a caller may configure, so that a wrong argument cannot turn the bound off. */
export const TRANSACTION_RETRY_ATTEMPTS_MAX = 10;

/**
 * Back-off before the first retry, in ms, doubled for each further retry. The ledger's transactions are a few
 * statements on one pooled connection: about 4 ms each at 32 concurrent clients on this project's machines
 * (docs/development.md note 24: ~8.3k tx/s at c=32). 10 ms lets the winner of the conflict finish, and release its
 * locks, before we run again.
 */
export const TRANSACTION_RETRY_BASE_DELAY_MS = 10;

/**
 * Longest single back-off, in ms. With the default three attempts the waits are at most 10 + 20 ms; with the
 * maximum of ten, at most 10 + 20 + 40 + 80 + 5 × 100 = 650 ms, well inside the pool's 10 s connection wait and
 * the 15 s statement timeout of lib/db.ts, so a retried request still answers in time.
 */
export const TRANSACTION_RETRY_MAX_DELAY_MS = 100;

/**
 * Back-off after a lost connection, in ms: 100 doubling to 1000. A failover takes seconds (docs/development.md note 26:
 * ~3.3 s for a restart in place, ~11 s for a lost node), so retrying faster than every 100 ms only burns
 * connection attempts against a node that is down; 1 s between the later attempts notices the new primary
 * within a second of HAProxy routing to it.
 */
export const FAILOVER_RETRY_BASE_DELAY_MS = 100;
export const FAILOVER_RETRY_MAX_DELAY_MS = 1000;

/** What {@link TransactionRetryOptions.onRetry} is told before each retry. */
export interface TransactionRetryInfo {
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** `conflict`: 40001 or 40P01 (bounded by attempts); `connection_lost`: a failover (bounded by time). */
  readonly reason: "conflict" | "connection_lost";
  /** The SQLSTATE of a conflict; null for a lost connection. */
  readonly sqlstate: RetryableSqlstate | null;
  /** How long the back-off before the next attempt is, in ms. */
  readonly delayMs: number;
  /** The error the failed attempt threw, unchanged. */
  readonly error: unknown;
}

/** Options of {@link withTransactionRetry}. */
export interface TransactionRetryOptions {
  /** Attempts in total, an integer in 1..{@link TRANSACTION_RETRY_ATTEMPTS_MAX}. Default 3. */
  attempts?: number;
  /**
   * How long, in ms from the first lost connection, a transaction that lost its connection is run again.
   * Default DB_FAILOVER_RETRY_MS (20 000); 0 turns the failover retry off. Conflicts do not count against it.
   */
  failoverRetryMs?: number;
  /** Called before each retry (for logging). Must not throw; if it does, that error propagates. */
  onRetry?: (info: TransactionRetryInfo) => void;
}

/**
 * The back-off before retry number `retry` (1 = the first retry), in ms: "equal jitter", half of the exponential
 * step fixed and half random, so the wait is never zero (the conflicting transaction needs a moment to finish)
 * and two victims of the same conflict do not come back in lockstep and collide again.
 *
 * `retry`: integer ≥ 1. `random`: a source of numbers in [0, 1), `Math.random` by default (injectable for tests).
 * Returns an integer in [step / 2, step] where step = min(TRANSACTION_RETRY_MAX_DELAY_MS, base × 2^(retry − 1)).
 */
export function transactionRetryDelayMs(retry: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, Math.floor(retry) - 1);
  const step = Math.min(TRANSACTION_RETRY_MAX_DELAY_MS, TRANSACTION_RETRY_BASE_DELAY_MS * 2 ** exponent);
  const half = step / 2;
  return Math.round(half + random() * half);
}

/**
 * The back-off before failover retry number `retry` (1 = the first), in ms: equal jitter over
 * min({@link FAILOVER_RETRY_MAX_DELAY_MS}, 100 × 2^(retry − 1)). `random` as in {@link transactionRetryDelayMs}.
 */
export function failoverRetryDelayMs(retry: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, Math.floor(retry) - 1);
  const step = Math.min(FAILOVER_RETRY_MAX_DELAY_MS, FAILOVER_RETRY_BASE_DELAY_MS * 2 ** Math.min(exponent, 16));
  const half = step / 2;
  return Math.round(half + random() * half);
}

let failoverRetriesUnderWay = 0;

/**
 * How many operations of this process are retrying after a lost database connection right now. The health
 * route reports "degraded" while it is above zero.
 */
export function failoverRetriesInProgress(): number {
  return failoverRetriesUnderWay;
}

/**
 * Runs `fn` and runs it again, as a whole, when it fails with
 *  - a serialization failure (40001) or a deadlock (40P01) anywhere in the error's chain (as
 *    {@link classifyDbError} finds it): after a short jittered back-off, up to `attempts` runs in total;
 *  - a lost connection (`connection_lost`: a failover): after a back-off of 100 ms doubling to 1 s, for at most
 *    `failoverRetryMs` from the first such failure. While it waits, {@link failoverRetriesInProgress} counts it.
 *
 * `fn` must be one whole transaction, from BEGIN to COMMIT (for example a call of `withTransaction` from
 * lib/db.ts), or a single autocommit statement, with no effect outside the database. PostgreSQL has rolled a
 * failed attempt back, except when the connection died while COMMIT was in flight: then the attempt may have
 * committed, and `fn` must be safe to run again after its own commit. Every ledger transaction is: it starts by
 * claiming its key, so a second run finds the key taken (by its own first run) and reads the row instead of
 * doing the work twice (lib/ledger/claim.ts). Never wrap a single statement inside an open transaction with this.
 *
 * Returns what `fn` returns. Throws the last attempt's error, unchanged, when the attempts or the failover time
 * ran out; throws any other error from `fn` at once, unchanged, without retrying. Throws `RangeError` when
 * `attempts` is not an integer in 1..10. Source: contract sections 8 and 10 (failover as a normal event).
 */
export async function withTransactionRetry<T>(fn: () => Promise<T>, options: TransactionRetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? TRANSACTION_RETRY_ATTEMPTS_DEFAULT;
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > TRANSACTION_RETRY_ATTEMPTS_MAX) {
    throw new RangeError(
      `attempts must be an integer in 1..${TRANSACTION_RETRY_ATTEMPTS_MAX}, got ${String(attempts)}`,
    );
  }
  let conflicts = 0;
  let failovers = 0;
  let failoverDeadlineMs: number | null = null;
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await fn();
      } catch (error) {
        const verdict = classifyDbError(error);
        let delayMs: number;
        if (verdict.kind === "retryable") {
          conflicts += 1;
          if (conflicts >= attempts) throw error;
          delayMs = transactionRetryDelayMs(conflicts);
          options.onRetry?.({ attempt, reason: "conflict", sqlstate: verdict.sqlstate, delayMs, error });
        } else if (verdict.kind === "connection_lost") {
          if (failoverDeadlineMs === null) {
            failoverDeadlineMs = Date.now() + (options.failoverRetryMs ?? env().DB_FAILOVER_RETRY_MS);
            failoverRetriesUnderWay += 1;
          }
          failovers += 1;
          delayMs = failoverRetryDelayMs(failovers);
          if (Date.now() + delayMs > failoverDeadlineMs) throw error;
          options.onRetry?.({ attempt, reason: "connection_lost", sqlstate: null, delayMs, error });
          log().warn(
            { attempt, delayMs, cause: verdict.cause, message: error instanceof Error ? error.message : String(error) },
            "database connection lost: retrying",
          );
        } else {
          throw error;
        }
        await new Promise<void>((resolve) => setTimeout(resolve, delayMs));
      }
    }
  } finally {
    if (failoverDeadlineMs !== null) failoverRetriesUnderWay -= 1;
  }
}
