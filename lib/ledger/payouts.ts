/**
 * Payout entries (contract section 14; docs/decisions/060): the claim that holds a withdrawal's money. One statement,
 * so a payout's money can never be half held, and nothing racing it can spend what is being paid out: the wallet is
 * debited by the claim itself, before the bank is called. A payout's success is an ordinary `completeEntry` without a
 * credit (its settlement posts the held money to the bank's clearing); its failure, on the bank's word only, is
 * `releaseReservation` (lib/ledger/refunds.ts), the same release as a refund's.
 */
import { retryingPool } from "../db";
import { entryColumns, toLedgerEntry, type LedgerEntry, type StoredResponse } from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";

export interface PayoutClaimRequest {
  /** `(user_id, "payout", refId)`. */
  readonly key: OperationKey;
  /** Positive integer, minor units of `currency`. */
  readonly amountMinor: number;
  readonly currency: string;
  /** Fingerprinted: amount, currency and destination. */
  readonly params: OperationParams;
  readonly leaseOwner: string;
  readonly leaseMs: number;
  /** The most a user's payouts may hold per UTC day, in minor units (PAYOUT_DAILY_LIMIT_MINOR). */
  readonly dailyLimitMinor: number;
  /** Stored as the row's first response when the claim is refused: 402 for the balance or an open debt, 422 for the
   * day's limit. */
  readonly refusals: {
    readonly insufficientFunds: StoredResponse;
    readonly debtOutstanding: StoredResponse;
    readonly limitExceeded: StoredResponse;
  };
}

export type PayoutClaimOutcome =
  /** This call claimed the key and held the money: the row is born `processing` under the caller's lease. */
  | { readonly kind: "held"; readonly entry: LedgerEntry; readonly balanceMinor: number }
  /** This call claimed the key and stored a refusal: the row is `failed` with its stored 402/422; nothing held. */
  | { readonly kind: "stored_refusal"; readonly entry: LedgerEntry }
  /** The key already has a row (another caller's, maybe this request's own lost commit): nothing held here. */
  | { readonly kind: "taken" };

// One call of the database function ledger_claim_payout (prisma/functions/ledger_claim_payout.sql: the wallet locked,
// the verdict, the claim, and for a claim that holds, the day's withdrawals and the debit), arguments by name. The
// claimed row's columns are NULL when this call claimed nothing.
const CLAIM_PAYOUT_SQL = `
SELECT c.verdict, c.balance_minor, ${entryColumns("(c.entry)")}
  FROM ledger_claim_payout(
         p_user_id => $1, p_ref_id => $2, p_amount_minor => $3::bigint, p_currency => $4, p_fingerprint => $5,
         p_params => $6::jsonb, p_lease_owner => $7, p_lease_ms => $8::int, p_daily_limit_minor => $9::bigint,
         p_insufficient_body => $10, p_debt_body => $11, p_limit_body => $12) AS c`;

/**
 * Claims a payout's key and holds its money in one autocommit statement (contract section 14): the row is inserted
 * `processing` under `leaseOwner`'s lease (the bank may be called once it commits, as for a top-up), the wallet debited into `payouts_in_flight` and the day's withdrawals
 * raised together; or, when the wallet has a debt open, does not cover the amount, or the day's payouts would pass
 * `dailyLimitMinor`, the row is inserted `failed` with its stored 402 `debt_outstanding` / 402 `insufficient_funds` /
 * 422 `payout_limit_exceeded` and nothing moves. A concurrent claim of the same key waits on the wallet's lock and
 * then inserts nothing (`taken`).
 *
 * Returns `held`, `stored_refusal` or `taken` (see {@link PayoutClaimOutcome}). Throws database errors as they come.
 */
export async function claimPayout(
  request: PayoutClaimRequest,
  db: Queryable = retryingPool(),
): Promise<PayoutClaimOutcome> {
  const { key, refusals } = request;
  const result = await db.query(
    prepared("ledger_claim_payout", CLAIM_PAYOUT_SQL, [
      key.userId,
      key.refId,
      request.amountMinor,
      request.currency,
      fingerprint(key.type, request.params),
      JSON.stringify(request.params),
      request.leaseOwner,
      request.leaseMs,
      request.dailyLimitMinor,
      refusals.insufficientFunds.body,
      refusals.debtOutstanding.body,
      refusals.limitExceeded.body,
    ]),
  );
  const row = result.rows[0] as Record<string, unknown>;
  // The row's columns are NULL when this call inserted nothing.
  if (row.id === null) return { kind: "taken" };
  const entry = toLedgerEntry(row);
  if (entry.status === "failed") return { kind: "stored_refusal", entry };
  return { kind: "held", entry, balanceMinor: row.balance_minor as number };
}
