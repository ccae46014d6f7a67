/**
 * Refund entries (contract section 11): the claim that reserves, and the release that gives a reservation back.
 * Both are one statement each, so a refund's money can never be half reserved or half given back, and a payment
 * racing a refund can never spend what is being refunded: the wallet is debited by the claim itself, before the bank
 * is called. A refund's success is an ordinary `completeEntry` without a credit (the money left at the claim).
 */
import { retryingPool } from "../db";
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

// One call of the database function ledger_claim_refund (prisma/functions/ledger_claim_refund.sql: the top-up's row
// and the wallet locked in that order, the verdict, the claim, and for a claim that reserved, the remainder and the
// debit), arguments by name. It returns the verdict, and the claimed row's columns (NULL when this call claimed
// nothing: the key was taken, or the top-up is not a succeeded one of this user).
const CLAIM_REFUND_SQL = `
SELECT c.verdict, c.balance_minor, ${entryColumns("(c.entry)")}
  FROM ledger_claim_refund(
         p_user_id => $1, p_ref_id => $2, p_amount_minor => $3::bigint, p_currency => $4, p_fingerprint => $5,
         p_params => $6::jsonb, p_lease_owner => $7, p_lease_ms => $8::int, p_actor => $9,
         p_topup_entry_id => $10::bigint, p_insufficient_body => $11, p_exceeds_body => $12, p_debt_body => $13,
         p_disputed_body => $14) AS c`;

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
  db: Queryable = retryingPool(),
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
  // The row's columns are NULL when this call inserted nothing.
  if (row.id === null) return { kind: "taken" };
  const entry = toLedgerEntry(row);
  if (entry.status === "failed") return { kind: "stored_refusal", entry };
  return { kind: "reserved", entry, balanceMinor: row.balance_minor as number };
}

// One call of the database function ledger_release_reservation (prisma/functions/ledger_release_reservation.sql: the
// row failed by the ledger's guarded move, then a refund's top-up remainder or a payout's day limit and the wallet
// given back, in that lock order), arguments by name. No row, or NULL columns: the row is not an unfinished refund or
// payout, nothing moved.
const RELEASE_RESERVATION_SQL = `
SELECT ${entryColumns("(r.entry)")}, r.balance_minor
  FROM ledger_release_reservation(
         p_user_id => $1, p_entry_id => $2::bigint, p_bank_ref => $3, p_actor => $4, p_detail => $5) AS r`;

export type ReleaseOutcome =
  /** This call failed the row and gave its reservation back (wallet, and a refund's top-up remainder or a payout's
   * share of its day's withdrawal limit). */
  | { readonly kind: "released"; readonly entry: LedgerEntry; readonly balanceMinor: number | null }
  /** The row is already terminal: nothing moved (a release happens at most once). */
  | { readonly kind: "unchanged" };

/**
 * Fails an unfinished refund or payout row as `declined_by_bank` and gives its reservation back to the wallet
 * (repaying an open debt first, contract section 12) and to the top-up's refundable remainder (a refund) or the day's
 * withdrawal limit (a payout), in one statement, at most once per row. Call it only on the bank's word that the
 * refund or payout failed (contract sections 11 and 14: a failure event is a claim until the bank confirms it).
 * `bankRef` (the bank's refund or payout id) is recorded on the row when known. Returns `released` or `unchanged`.
 * Throws database errors.
 */
export async function releaseReservation(
  ref: { readonly userId: string; readonly entryId: number },
  door: { readonly actor: TransitionActor; readonly detail: string; readonly bankRef?: string | null },
  db: Queryable = retryingPool(),
): Promise<ReleaseOutcome> {
  const result = await db.query(
    prepared("ledger_release_reservation", RELEASE_RESERVATION_SQL, [
      ref.userId,
      ref.entryId,
      door.bankRef ?? null,
      door.actor,
      door.detail,
    ]),
  );
  const row = result.rows[0];
  // The function's one row holds NULL columns when nothing was released.
  if (!row || row.id === null) return { kind: "unchanged" };
  return { kind: "released", entry: toLedgerEntry(row), balanceMinor: (row.balance_minor as number | null) ?? null };
}

const SELECT_REFUNDS_OF_SQL = `SELECT ${ENTRY_COLUMNS} FROM ledger_entries
 WHERE user_id = $1 AND refunds_entry_id = $2 ORDER BY id`;

/** The refund rows of a top-up (any status), oldest first. Throws database errors. */
export async function listRefundsOf(
  topup: { readonly userId: string; readonly id: number },
  db: Queryable = retryingPool(),
): Promise<LedgerEntry[]> {
  const result = await db.query(SELECT_REFUNDS_OF_SQL, [topup.userId, topup.id]);
  return result.rows.map(toLedgerEntry);
}
