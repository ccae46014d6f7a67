/**
 * Bounded retry of whole transactions that PostgreSQL aborted for a serialization failure (40001) or a deadlock
 * (40P01), contract section 8. Every other error is rethrown at once, unchanged.
 */
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
 * (stack-notes 24: ~8.3k tx/s at c=32). 10 ms lets the winner of the conflict finish, and release its locks,
 * before we run again.
 */
export const TRANSACTION_RETRY_BASE_DELAY_MS = 10;

/**
 * Longest single back-off, in ms. With the default three attempts the waits are at most 10 + 20 ms; with the
 * maximum of ten, at most 10 + 20 + 40 + 80 + 5 × 100 = 650 ms, well inside the pool's 10 s connection wait and
 * the 15 s statement timeout of lib/db.ts, so a retried request still answers in time.
 */
export const TRANSACTION_RETRY_MAX_DELAY_MS = 100;

/** What {@link TransactionRetryOptions.onRetry} is told before each retry. */
export interface TransactionRetryInfo {
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  readonly sqlstate: RetryableSqlstate;
  /** How long the back-off before the next attempt is, in ms. */
  readonly delayMs: number;
  /** The error the failed attempt threw, unchanged. */
  readonly error: unknown;
}

/** Options of {@link withTransactionRetry}. */
export interface TransactionRetryOptions {
  /** Attempts in total, an integer in 1..{@link TRANSACTION_RETRY_ATTEMPTS_MAX}. Default 3. */
  attempts?: number;
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
 * Runs `fn` and, when it fails with a serialization failure (40001) or a deadlock (40P01) anywhere in the error's
 * chain (as {@link classifyDbError} finds it), runs it again after a short jittered back-off, up to `attempts`
 * runs in total.
 *
 * `fn` must be one whole transaction, from BEGIN to COMMIT (for example a call of `withTransaction` from
 * lib/db.ts), with no effect outside the database: PostgreSQL has rolled the failed attempt back entirely, and
 * only a fresh transaction can succeed. Never wrap a single statement inside an open transaction with this.
 *
 * Returns what `fn` returns. Throws the last attempt's error, unchanged, when every attempt failed with a
 * retryable error; throws any other error from `fn` at once, unchanged, without retrying. Throws `RangeError`
 * when `attempts` is not an integer in 1..10. Source: contract section 8.
 */
export async function withTransactionRetry<T>(fn: () => Promise<T>, options: TransactionRetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? TRANSACTION_RETRY_ATTEMPTS_DEFAULT;
  if (!Number.isInteger(attempts) || attempts < 1 || attempts > TRANSACTION_RETRY_ATTEMPTS_MAX) {
    throw new RangeError(
      `attempts must be an integer in 1..${TRANSACTION_RETRY_ATTEMPTS_MAX}, got ${String(attempts)}`,
    );
  }
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await fn();
    } catch (error) {
      const verdict = classifyDbError(error);
      if (verdict.kind !== "retryable" || attempt >= attempts) throw error;
      const delayMs = transactionRetryDelayMs(attempt);
      options.onRetry?.({ attempt, sqlstate: verdict.sqlstate, delayMs, error });
      await new Promise<void>((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
