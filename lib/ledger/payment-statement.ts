/**
 * A payment decided in one round trip under the wallet's lock (contract sections 1, 3 and 8): one call of a PL/pgSQL
 * function that locks the wallet row, then writes the claim, the conditional debit, the row's terminal state, its
 * audit rows and its stored first response together in one statement of data-modifying CTEs (docs/decisions/040).
 */
import { classifyDbError } from "./db-errors";
import { ENTRY_COLUMNS, toLedgerEntry, type LedgerEntry, type StoredResponse } from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";

/**
 * Where a payment's success body holds its timestamps (`createdAt`, `updatedAt`): the statement writes the row's
 * creation time there (both are the statement's `now()`, in milliseconds, as `Date.prototype.toISOString` writes
 * it), so the stored body is the one `paymentView` renders from the row. The function's SQL names it literally.
 */
export const RESPONSE_TIME_SLOT = "{{now}}";

/**
 * Where a `debt_outstanding` body holds the wallet's debt: the statement writes it as `formatMinor` does. The
 * function's SQL names it literally.
 */
export const RESPONSE_DEBT_SLOT = "{{debt}}";

/** The first responses a payment may store; the statement picks one by what the locked wallet row says. */
export interface PaymentResponses {
  /** 201 with the payment's view; every timestamp written as {@link RESPONSE_TIME_SLOT}. */
  readonly succeeded: StoredResponse;
  /** 402 insufficient_funds, stored as given. */
  readonly insufficientFunds: StoredResponse;
  /** 402 debt_outstanding; the debt written as {@link RESPONSE_DEBT_SLOT}. */
  readonly debtOutstanding: StoredResponse;
}

export interface PaymentDecisionRequest {
  /** A `payment` key. */
  readonly key: OperationKey;
  /** Positive integer in minor units of `currency`. */
  readonly amountMinor: number;
  /** ISO 4217 code. */
  readonly currency: string;
  /** The fingerprinted parameters (amount and currency). */
  readonly params: OperationParams;
  readonly responses: PaymentResponses;
}

// The payment is one statement, a call of the PL/pgSQL function ledger_decide_payment
// (prisma/functions/ledger_decide_payment.sql, where its SQL and the reason for each part are written). The function
// locks the wallet row in a statement of its own first, then claims and decides in a second. A statement's snapshot is
// taken before it waits for a lock, so a statement that locked the wallet row itself would, after waiting on a
// credit, decide on the credit's version (FOR UPDATE returns the newest) while its debit re-checked an older one; the
// storm found such a payment recorded succeeded without its debit (tests/integration/payments.test.ts, "a credit
// committed while the payment waits"). A VOLATILE function takes a new snapshot for each statement it runs, so the
// deciding statement reads the wallet as the lock left it: the decision and the debit read the same version. A user
// with no wallet row has nothing to lock, and the decision then treats the wallet as absent even if a credit has
// created it since (that row is not locked, and a payment racing on it could spend it before this debit ran).
// One round trip instead of four (BEGIN, lock, decide, COMMIT: docs/decisions/040, second amendment).
// $1 user_id, $2 ref_id, $3 amount (minor units), $4 currency, $5 fingerprint, $6 params (json), $7/$8 the success
// status and body, $9/$10 the insufficient-funds status and body, $11/$12 the debt status and body.
const DECIDE_PAYMENT_SQL = `SELECT ${ENTRY_COLUMNS}
  FROM ledger_decide_payment($1, $2, $3::bigint, $4, $5, $6::jsonb, $7::smallint, $8, $9::smallint, $10,
                             $11::smallint, $12)`;

/** A payment this statement claimed and decided: the terminal row and its stored first response. */
export interface DecidedPayment {
  readonly entry: LedgerEntry;
  readonly response: StoredResponse;
}

/**
 * Claims `request.key` and decides the payment in one statement on `db`: a pool or client in autocommit, where the
 * statement commits by itself (the caller must treat it as possibly committed once sent), or a client inside a READ
 * COMMITTED transaction that the caller commits (the wallet lock then lasts until that commit).
 * Returns the new row, terminal, and its stored first response: `succeeded` when the wallet covered
 * `amountMinor` with no debt open (debited in the same statement; the 201 body with the row's time), else `failed`
 * with `debt_outstanding` (the debt written into its body) or `insufficient_funds` (contract sections 8 and 12).
 * Returns null when the key already has a row (also for a unique violation of the claim index itself, contract
 * section 8): the caller reads that row (a loser, or this request's own earlier attempt).
 * Throws database errors as they come.
 */
export async function decidePaymentUnderWalletLock(
  db: Queryable,
  request: PaymentDecisionRequest,
): Promise<DecidedPayment | null> {
  const { key, responses } = request;
  const row = await db
    .query(
      prepared("ledger_decide_payment", DECIDE_PAYMENT_SQL, [
        key.userId,
        key.refId,
        request.amountMinor,
        request.currency,
        fingerprint(key.type, request.params),
        JSON.stringify(request.params),
        responses.succeeded.status,
        responses.succeeded.body,
        responses.insufficientFunds.status,
        responses.insufficientFunds.body,
        responses.debtOutstanding.status,
        responses.debtOutstanding.body,
      ]),
    )
    .then(
      (result) => result.rows[0],
      (error: unknown) => {
        // ON CONFLICT makes it unexpected, but a 23505 naming the claim index means exactly "the key is taken".
        if (classifyDbError(error).kind === "already_claimed") return undefined;
        throw error;
      },
    );
  // No row back: the key already had one. The race is decided here, by the claim index.
  if (!row) return null;
  return {
    entry: toLedgerEntry(row),
    response: { status: row.response_status as number, body: row.response_body as string },
  };
}
