/**
 * Refund entries (contract section 11): the claim that reserves, and the release that gives a reservation back.
 * Both are one statement each, so a refund's money can never be half reserved or half given back, and a payment
 * racing a refund can never spend what is being refunded: the wallet is debited by the claim itself, before the bank
 * is called. A refund's success is an ordinary `completeEntry` without a credit (the money left at the claim).
 */
import { autocommit } from "../db";
import {
  ENTRY_COLUMNS,
  entryColumns,
  toLedgerEntry,
  type LedgerEntry,
  type StoredResponse,
  type TransitionActor,
} from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";

export interface RefundClaimRequest {
  /** `(user_id, "refund", refundId)`: the user is the top-up's owner. */
  readonly key: OperationKey;
  /** The succeeded top-up's row id (same user). */
  readonly topupEntryId: number;
  /** Positive integer, minor units of `currency` (the top-up's). */
  readonly amountMinor: number;
  readonly currency: string;
  /** Fingerprinted: amount, currency and the top-up's ref id. */
  readonly params: OperationParams;
  readonly leaseOwner: string;
  readonly leaseMs: number;
  readonly actor: TransitionActor;
  /**
   * Stored as the row's first response when the claim is refused: for the balance (402), for an open debt (402,
   * contract section 12), for the top-up's remainder (422), or for a dispute on the top-up's charge that is open
   * or lost (422, contract section 11; case C26).
   */
  readonly refusals: {
    readonly insufficientFunds: StoredResponse;
    readonly debtOutstanding: StoredResponse;
    readonly exceedsTopup: StoredResponse;
    readonly topupDisputed: StoredResponse;
  };
}

export type RefundClaimOutcome =
  /** This call claimed the key and reserved the money: the row is `initiated`, wallet and remainder lowered. */
  | { readonly kind: "reserved"; readonly entry: LedgerEntry; readonly balanceMinor: number }
  /**
   * This call claimed the key and stored a refusal: the row is `failed` with its stored 402/422; nothing reserved.
   * (Not an OperationResult `refused`: that one is refused before any claim, with nothing stored.)
   */
  | { readonly kind: "stored_refusal"; readonly entry: LedgerEntry }
  /** The key already has a row (another caller's, maybe this request's own lost commit): nothing reserved here. */
  | { readonly kind: "taken" }
  /** The top-up is not a succeeded top-up of this user: nothing claimed, nothing reserved (not stored). */
  | { readonly kind: "topup_not_refundable" };

// One statement (contract section 11). topup and wallet lock the two rows the money comes out of, in that order
// (every refund statement, and a dispute's landing in lib/chargebacks/apply-dispute.ts, takes them in this order);
// at READ COMMITTED a locked row is read in its newest version, so verdict decides on the current dispute state,
// remainder, debt and balance. A top-up whose charge has a dispute open or lost is refused first (case C26: the
// dispute returns the cardholder's money, so a refund would return it twice; the bank refuses the same refund).
// A wallet with a debt open is refused before its balance is looked at (contract section 11: a refund waits, like
// a payment, until credits have repaid the debt; with a debt open the balance is 0 anyway, section 12). claimed inserts the row: `initiated` with a lease when
// the money is there, `failed` with its stored refusal otherwise; ON CONFLICT makes a loser insert nothing.
// reserved and debited lower the remainder and the balance only for a row this statement inserted as `initiated`.
// $1 user id, $2 ref id, $3 amount, $4 currency, $5 fingerprint, $6 params, $7 lease owner, $8 lease ms, $9 actor,
// $10 top-up entry id, $11 402 insufficient_funds body, $12 422 body, $13 402 debt_outstanding body,
// $14 422 topup_disputed body.
const CLAIM_REFUND_SQL = `
WITH topup AS (
  SELECT amount_minor - refunded_minor AS remaining_minor, dispute_status
    FROM ledger_entries
   WHERE user_id = $1 AND id = $10 AND type = 'topup' AND status = 'succeeded'
   FOR UPDATE
), wallet AS (
  SELECT balance_minor, debt_minor FROM wallets WHERE user_id = $1 FOR UPDATE
), verdict AS (
  SELECT CASE
           WHEN NOT EXISTS (SELECT 1 FROM topup) THEN 'topup_not_refundable'
           WHEN (SELECT dispute_status FROM topup) IN ('open', 'lost') THEN 'topup_disputed'
           WHEN (SELECT remaining_minor FROM topup) < $3 THEN 'refund_exceeds_topup'
           WHEN COALESCE((SELECT debt_minor FROM wallet), 0) > 0 THEN 'debt_outstanding'
           WHEN COALESCE((SELECT balance_minor FROM wallet), 0) < $3 THEN 'insufficient_funds'
           ELSE 'reserved'
         END AS v
), claimed AS (
  INSERT INTO ledger_entries
    (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, failure_reason, response_status,
     response_body, lease_owner, lease_expires_at, refunds_entry_id)
  SELECT $1, 'refund', $2, $3, $4, $5, $6::jsonb,
         CASE WHEN v = 'reserved' THEN 'initiated' ELSE 'failed' END,
         CASE WHEN v = 'reserved' THEN NULL ELSE v END,
         CASE v WHEN 'refund_exceeds_topup' THEN 422 WHEN 'topup_disputed' THEN 422 WHEN 'reserved' THEN NULL ELSE 402 END,
         CASE v WHEN 'insufficient_funds' THEN $11 WHEN 'refund_exceeds_topup' THEN $12 WHEN 'debt_outstanding' THEN $13
                WHEN 'topup_disputed' THEN $14 END,
         CASE WHEN v = 'reserved' THEN $7 END,
         CASE WHEN v = 'reserved' THEN now() + $8::int * interval '1 millisecond' END,
         $10::bigint
    FROM verdict
   WHERE v <> 'topup_not_refundable'
  ON CONFLICT (user_id, type, ref_id) DO NOTHING
  RETURNING ${ENTRY_COLUMNS}
), reserved AS (
  UPDATE ledger_entries t SET refunded_minor = t.refunded_minor + c.amount_minor
    FROM claimed c
   WHERE c.status = 'initiated' AND t.user_id = $1 AND t.id = $10
  RETURNING t.refunded_minor
), debited AS (
  UPDATE wallets w SET balance_minor = w.balance_minor - c.amount_minor, updated_at = now()
    FROM claimed c
   WHERE c.status = 'initiated' AND w.user_id = $1
  RETURNING w.balance_minor
), logged AS (
  INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
  SELECT user_id, id, NULL, status, $9, attempt,
         CASE WHEN status = 'initiated' THEN 'claimed: refund reserved from the wallet and the top-up'
              ELSE 'claimed and refused: nothing reserved' END
    FROM claimed
)
SELECT (SELECT v FROM verdict) AS verdict, (SELECT balance_minor FROM debited) AS balance_minor,
       (SELECT refunded_minor FROM reserved) AS topup_refunded_minor, claimed.*
  FROM (SELECT 1) AS one LEFT JOIN claimed ON true`;

/**
 * Claims a refund's key and reserves its money in one autocommit statement (contract section 11): the row is
 * inserted, the wallet debited and the top-up's refundable remainder lowered together, or, when a dispute on the
 * top-up's charge is open or lost (case C26), either would go below zero, or the wallet has a debt open (contract
 * section 12), the row is inserted `failed` with its stored 422 `topup_disputed` / 422 `refund_exceeds_topup` / 402
 * `debt_outstanding` / 402 `insufficient_funds` and nothing moves. A concurrent claim of the same key waits on the
 * locks and then inserts nothing (`taken`).
 *
 * Returns `reserved`, `stored_refusal`, `taken` or `topup_not_refundable` (see {@link RefundClaimOutcome}). Throws database
 * errors as they come (a 23505 on the claim index cannot happen: ON CONFLICT).
 */
export async function claimRefund(
  request: RefundClaimRequest,
  db: Queryable = autocommit(),
): Promise<RefundClaimOutcome> {
  const { key } = request;
  const result = await db.query(
    prepared("ledger_claim_refund", CLAIM_REFUND_SQL, [
      key.userId,
      key.refId,
      request.amountMinor,
      request.currency,
      fingerprint(key.type, request.params),
      JSON.stringify(request.params),
      request.leaseOwner,
      request.leaseMs,
      request.actor,
      request.topupEntryId,
      request.refusals.insufficientFunds.body,
      request.refusals.exceedsTopup.body,
      request.refusals.debtOutstanding.body,
      request.refusals.topupDisputed.body,
    ]),
  );
  const row = result.rows[0] as Record<string, unknown>;
  if (row.verdict === "topup_not_refundable") return { kind: "topup_not_refundable" };
  // claimed.* comes through the LEFT JOIN as NULL columns when this call inserted nothing.
  if (row.id === null) return { kind: "taken" };
  const entry = toLedgerEntry(row);
  if (entry.status === "failed") return { kind: "stored_refusal", entry };
  return { kind: "reserved", entry, balanceMinor: row.balance_minor as number };
}

// One statement: lock the refund row (prev, for the status it leaves), fail it if it is still unfinished (moved),
// and only then give its amount back to the top-up's remainder (restored) and the wallet (credited), and append the
// audit row. The guard is moved's WHERE: a refund's reservation is given back at most once, whoever calls. The give
// back is a credit like any other: it repays the wallet's debt first (contract section 12; a chargeback may have
// landed while the refund was in flight), both SET expressions reading the row as it was before the update.
// $1 user id, $2 refund entry id, $3 bank refund id (kept when null), $4 actor, $5 audit detail.
const RELEASE_REFUND_SQL = `
WITH prev AS (
  SELECT user_id, id, status FROM ledger_entries WHERE user_id = $1 AND id = $2 FOR UPDATE
), moved AS (
  UPDATE ledger_entries e
     SET status = 'failed', failure_reason = 'declined_by_bank', bank_charge_id = COALESCE($3, e.bank_charge_id),
         lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
    FROM prev
   WHERE e.user_id = $1 AND e.id = $2 AND e.type = 'refund' AND e.status IN ('initiated', 'processing')
  RETURNING ${entryColumns("e")}, prev.status AS from_status
), restored AS (
  UPDATE ledger_entries t SET refunded_minor = t.refunded_minor - m.amount_minor
    FROM moved m
   WHERE t.user_id = $1 AND t.id = m.refunds_entry_id
  RETURNING t.refunded_minor
), credited AS (
  UPDATE wallets w
     SET balance_minor = w.balance_minor + GREATEST(m.amount_minor - w.debt_minor, 0),
         debt_minor = GREATEST(w.debt_minor - m.amount_minor, 0),
         updated_at = now()
    FROM moved m
   WHERE w.user_id = $1
  RETURNING w.balance_minor
), logged AS (
  INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
  SELECT user_id, id, from_status, status, $4, attempt, $5 FROM moved
)
SELECT moved.*, (SELECT balance_minor FROM credited) AS balance_minor FROM moved`;

export type RefundReleaseOutcome =
  /** This call failed the row and gave its reservation back (wallet and top-up remainder). */
  | { readonly kind: "released"; readonly entry: LedgerEntry; readonly balanceMinor: number | null }
  /** The row is already terminal: nothing moved (a release happens at most once). */
  | { readonly kind: "unchanged" };

/**
 * Fails an unfinished refund row as `declined_by_bank` and gives its reservation back to the wallet (repaying an
 * open debt first, contract section 12) and to the top-up's refundable remainder, in one statement, at most once
 * per row. Call it only on the bank's word that the
 * refund failed (contract section 11: a `refund.failed` event is a claim until the bank confirms it).
 * `bankRefundId` is recorded on the row when known. Returns `released` or `unchanged`. Throws database errors.
 */
export async function releaseRefund(
  ref: { readonly userId: string; readonly entryId: number },
  door: { readonly actor: TransitionActor; readonly detail: string; readonly bankRefundId?: string | null },
  db: Queryable = autocommit(),
): Promise<RefundReleaseOutcome> {
  const result = await db.query(
    prepared("ledger_release_refund", RELEASE_REFUND_SQL, [
      ref.userId,
      ref.entryId,
      door.bankRefundId ?? null,
      door.actor,
      door.detail,
    ]),
  );
  const row = result.rows[0];
  if (!row) return { kind: "unchanged" };
  return { kind: "released", entry: toLedgerEntry(row), balanceMinor: (row.balance_minor as number | null) ?? null };
}

const SELECT_REFUNDS_OF_SQL = `SELECT ${ENTRY_COLUMNS} FROM ledger_entries
 WHERE user_id = $1 AND refunds_entry_id = $2 ORDER BY id`;

/** The refund rows of a top-up (any status), oldest first. Throws database errors. */
export async function listRefundsOf(
  topup: { readonly userId: string; readonly id: number },
  db: Queryable = autocommit(),
): Promise<LedgerEntry[]> {
  const result = await db.query(SELECT_REFUNDS_OF_SQL, [topup.userId, topup.id]);
  return result.rows.map(toLedgerEntry);
}
