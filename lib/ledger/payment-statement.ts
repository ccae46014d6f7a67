/**
 * A payment decided in one statement under the wallet's lock (contract sections 1, 3 and 8): the wallet row is
 * locked by a first statement, then the claim, the conditional debit, the row's terminal state, its audit rows and
 * its stored first response are written together by one statement of data-modifying CTEs (docs/decisions/040).
 */
import { classifyDbError } from "./db-errors";
import { ENTRY_COLUMNS, toLedgerEntry, type LedgerEntry, type StoredResponse } from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";

/**
 * Where a payment's success body holds its timestamps (`createdAt`, `updatedAt`): the statement writes the row's
 * creation time there (both are the statement's `now()`, in milliseconds, as `Date.prototype.toISOString` writes
 * it), so the stored body is the one `paymentView` renders from the row.
 */
export const RESPONSE_TIME_SLOT = "{{now}}";

/** Where a `debt_outstanding` body holds the wallet's debt: the statement writes it as `formatMinor` does. */
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

// The lock comes first, in a statement of its own. A statement's snapshot is taken before it waits for a lock, so
// a statement that locked the wallet row itself would, after waiting on a credit, decide on the credit's version
// (FOR UPDATE returns the newest) while its debit re-checked an older one; the storm found such a payment recorded
// succeeded without its debit (tests/integration/payments.test.ts, "a credit committed while the payment waits").
// Locked first, the row cannot change after the deciding statement's snapshot: the decision and the debit read
// the same version, with no re-check. A user with no wallet row has nothing to lock: the deciding statement is
// told so ($13), and treats the wallet as absent even if a credit has created it since (that row is not locked,
// and a payment racing on it could spend it before this debit ran).
const LOCK_WALLET_SQL = "SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE";

// wallet: the user's wallet row, locked by this transaction (LOCK_WALLET_SQL); none when the lock found no row.
// decision: what that version allows (contract section 8: the balance covers the amount; section 12: no debt
// open). A user without a wallet row has nothing to pay with.
// claimed: the claim (contract section 1): the row is inserted already terminal, with its failure reason and its
// stored first response, or nothing is inserted when the key has a row (ON CONFLICT DO NOTHING waits for an
// uncommitted duplicate and then inserts nothing). Everything below runs only on a row this statement claimed.
// debited: the conditional debit, only for a claimed success; it repeats the decision's guard on the same locked
// version, so it cannot disagree with the decision (the balance CHECK stays the last line of defence).
// logged: the audit rows the two-step path wrote (claim: NULL -> initiated; decision: initiated -> final), attempt 1.
// $1 user_id, $2 ref_id, $3 amount (minor units), $4 currency, $5 fingerprint, $6 params (json), $7/$8 the success
// status and body, $9/$10 the insufficient-funds status and body, $11/$12 the debt status and body, $13 whether
// LOCK_WALLET_SQL locked a row.
const DECIDE_PAYMENT_SQL = `
WITH wallet AS (
  SELECT balance_minor, debt_minor FROM wallets WHERE user_id = $1 AND $13::boolean
), decision AS (
  SELECT COALESCE(w.balance_minor >= $3::bigint AND w.debt_minor = 0, false) AS covered,
         COALESCE(w.debt_minor, 0) AS debt_minor
    FROM (SELECT 1) AS one LEFT JOIN wallet w ON true
), claimed AS (
  INSERT INTO ledger_entries
    (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, failure_reason,
     response_status, response_body)
  SELECT $1, 'payment', $2, $3::bigint, $4, $5, $6::jsonb,
         CASE WHEN d.covered THEN 'succeeded' ELSE 'failed' END,
         CASE WHEN d.covered THEN NULL WHEN d.debt_minor > 0 THEN 'debt_outstanding' ELSE 'insufficient_funds' END,
         CASE WHEN d.covered THEN $7::smallint WHEN d.debt_minor > 0 THEN $11::smallint ELSE $9::smallint END,
         CASE WHEN d.covered
              THEN replace($8::text, '${RESPONSE_TIME_SLOT}',
                           to_char(now()::timestamptz(3) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
              WHEN d.debt_minor > 0
              THEN replace($12::text, '${RESPONSE_DEBT_SLOT}',
                           (d.debt_minor / 100)::text || '.' || lpad((d.debt_minor % 100)::text, 2, '0'))
              ELSE $10::text END
    FROM decision d
  ON CONFLICT (user_id, type, ref_id) DO NOTHING
  RETURNING ${ENTRY_COLUMNS}
), debited AS (
  UPDATE wallets SET balance_minor = balance_minor - $3::bigint, updated_at = now()
   WHERE user_id = $1 AND balance_minor >= $3::bigint AND debt_minor = 0
     AND EXISTS (SELECT 1 FROM claimed WHERE status = 'succeeded')
  RETURNING balance_minor
), logged AS (
  INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt)
  SELECT c.user_id, c.id, step.from_status, step.to_status, 'request', c.attempt
    FROM claimed c
   CROSS JOIN LATERAL (VALUES (1, NULL::text, 'initiated'::text), (2, 'initiated', c.status)) AS step(n, from_status, to_status)
   ORDER BY step.n
)
SELECT claimed.* FROM claimed`;

/** A payment this statement claimed and decided: the terminal row and its stored first response. */
export interface DecidedPayment {
  readonly entry: LedgerEntry;
  readonly response: StoredResponse;
}

/**
 * Claims `request.key` and decides the payment on `tx`, a client inside a READ COMMITTED transaction that the caller
 * commits (the wallet lock lasts until then): two statements, the wallet lock, then the claim and its decision.
 * Returns the new row, terminal, and its stored first response: `succeeded` when the wallet covered
 * `amountMinor` with no debt open (debited in the same statement; the 201 body with the row's time), else `failed`
 * with `debt_outstanding` (the debt written into its body) or `insufficient_funds` (contract sections 8 and 12).
 * Returns null when the key already has a row (also for a unique violation of the claim index itself, contract
 * section 8): the caller reads that row (a loser, or this request's own earlier attempt).
 * Throws database errors as they come.
 */
export async function decidePaymentUnderWalletLock(
  tx: Queryable,
  request: PaymentDecisionRequest,
): Promise<DecidedPayment | null> {
  const { key, responses } = request;
  const lock = await tx.query(prepared("ledger_lock_wallet", LOCK_WALLET_SQL, [key.userId]));
  const row = await tx
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
        lock.rows.length === 1,
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
