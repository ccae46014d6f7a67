/**
 * A payment decided in one round trip under the wallet's lock (contract sections 1, 3 and 8): one call of the database
 * function ledger_decide_payment, which locks the wallet row, then claims the row terminal with its audit rows and
 * stored first response and makes the conditional debit, all in the caller's one statement (docs/decisions/040).
 */
import { decidedClaimOf, type DecidedClaim } from "./decided-claim";
import { ENTRY_COLUMNS, type StoredResponse } from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";
import type { ResponseTemplate } from "./response-template";

/** The first responses a payment may store; the statement picks one by what the locked wallet row says. */
export interface PaymentResponses {
  /** 201 with the payment's view; its timestamps are the template's slots (views.ts `succeededPaymentResponse`). */
  readonly succeeded: ResponseTemplate;
  /** 402 insufficient_funds, stored as given. */
  readonly insufficientFunds: StoredResponse;
  /** 402 debt_outstanding; the wallet's debt, as the lock leaves it, is the template's slot. */
  readonly debtOutstanding: ResponseTemplate;
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

// The payment is one statement, a call of the database function ledger_decide_payment (its file,
// prisma/functions/ledger_decide_payment.sql, says what it does and why): the wallet's lock first, then the decision
// on the wallet as the lock left it, the claim born terminal with its stored first response, and the debit, in the
// caller's one autocommit statement: one round trip instead of four (BEGIN, lock, decide, COMMIT:
// docs/decisions/040). Arguments by name.
const DECIDE_PAYMENT_SQL = `SELECT ${ENTRY_COLUMNS}
  FROM ledger_decide_payment(
    p_user_id => $1, p_ref_id => $2, p_amount_minor => $3::bigint, p_currency => $4, p_fingerprint => $5,
    p_params => $6::jsonb, p_succeeded_status => $7::smallint, p_succeeded_body => $8::text[],
    p_insufficient_status => $9::smallint, p_insufficient_body => $10, p_debt_status => $11::smallint,
    p_debt_body => $12::text[])`;

/** A payment this statement claimed and decided: the terminal row and its stored first response. */
export type DecidedPayment = DecidedClaim;

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
  // No row back: the key already had one. The race is decided here, by the claim index.
  return decidedClaimOf(
    db.query(
      prepared("ledger_decide_payment", DECIDE_PAYMENT_SQL, [
        key.userId,
        key.refId,
        request.amountMinor,
        request.currency,
        fingerprint(key.type, request.params),
        JSON.stringify(request.params),
        responses.succeeded.status,
        responses.succeeded.segments,
        responses.insufficientFunds.status,
        responses.insufficientFunds.body,
        responses.debtOutstanding.status,
        responses.debtOutstanding.segments,
      ]),
    ),
  );
}
