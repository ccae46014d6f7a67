/**
 * The ledger row as the application sees it, and its mapping from PostgreSQL. Amounts are JS numbers:
 * every int8 in the schema is CHECKed below 2^53 and lib/db.ts refuses any unsafe int8, so no `bigint`
 * can reach `JSON.stringify`.
 */
import type { LedgerType } from "./keys";
import type { OperationParams } from "./fingerprint";

/** Lifecycle of a row (contract section 2). `succeeded` and `failed` are terminal. */
export type EntryStatus = "initiated" | "processing" | "succeeded" | "failed";

/**
 * Why a row failed: one union for every door and every operation (contract sections 3 and 5), shown to users in
 * plain words by lib/web/failure-reasons.ts.
 * - `declined_by_bank`: the bank says the charge did not and will not succeed;
 * - `expired`: the top-up never reached the bank, and the bank confirmed its key can never be charged;
 * - `insufficient_funds`: the payment's debit found the balance short (a stored 402);
 * - `balance_limit_exceeded`: the credit would not fit under MAX_BALANCE_MINOR, so nothing was charged or credited
 *   (a stored 422; contract section 5, case C15);
 * - `refund_exceeds_topup`: a refund's amount is more than what is left to refund of its top-up (a stored 422,
 *   contract section 11). A refund the bank reports failed is `declined_by_bank`; one refused for the balance,
 *   `insufficient_funds`.
 * - `debt_outstanding`: a payment or a refund found a debt open on the wallet (a stored 402; contract sections 11
 *   and 12).
 * - `topup_disputed`: a refund's top-up has a dispute open or lost at the bank, which returns the cardholder's money
 *   itself (a stored 422; contract section 11, case C26).
 */
export type FailureReason =
  | "declined_by_bank"
  | "expired"
  | "insufficient_funds"
  | "balance_limit_exceeded"
  | "refund_exceeds_topup"
  | "debt_outstanding"
  | "topup_disputed"
  /** A payout's stored refusal: the UTC day's withdrawals would pass PAYOUT_DAILY_LIMIT_MINOR (contract section 14). */
  | "payout_limit_exceeded"
  /** A transfer's stored refusal: the recipient's wallet would pass its balance ceiling (contract section 15). */
  | "recipient_cannot_receive";

/**
 * The bank's word on a dispute of the charge an entry credited (contract section 12), as far as the ledger knows it:
 * `open`, `lost` (charged back; reversed later if it becomes `won`), `won` (outright or reversed). Only moves forward.
 */
export type DisputeStatus = "open" | "lost" | "won";

/** Who moved a row (contract section 2, audit table). */
export type TransitionActor = "request" | "webhook" | "reconciler" | "admin";

/** A stored first response: the HTTP status code and the exact body text (contract section 3). */
export interface StoredResponse {
  readonly status: number;
  readonly body: string;
}

export interface LedgerEntry {
  readonly id: number;
  readonly userId: string;
  readonly type: LedgerType;
  readonly refId: string;
  readonly amountMinor: number;
  readonly currency: string;
  readonly fingerprint: string;
  readonly params: OperationParams;
  readonly status: EntryStatus;
  readonly failureReason: FailureReason | null;
  readonly response: StoredResponse | null;
  readonly leaseOwner: string | null;
  readonly leaseExpiresAt: Date | null;
  /**
   * The fencing token: raised on every take-over; a lease holder's writes are conditional on it. Stored in the
   * column `attempt` (contract section 2 names it so); in TypeScript "attempt" means only a request's try.
   */
  readonly fencingToken: number;
  readonly bankChargeId: string | null;
  /** Failed attempts to settle the row from the bank's word (a refused credit, a lost connection), contract 5. */
  readonly settleFailures: number;
  /** The last such failure, described for admins; null when none happened. */
  readonly settleLastError: string | null;
  /** When the failures reached SETTLE_ATTEMPTS_MAX: the row is flagged for attention. */
  readonly settleFlaggedAt: Date | null;
  /** An `adjustment`'s link: the id of the failed top-up it settles (contract section 5); null for other types. */
  readonly adjustsEntryId: number | null;
  /** A `refund`'s link: the id of the succeeded top-up it gives money back on (contract section 11); null otherwise. */
  readonly refundsEntryId: number | null;
  /** A top-up's refunds, reserved or final, in minor units (0 for other types); its remainder is amount - this. */
  readonly refundedMinor: number;
  /** A top-up's or adjustment's dispute state (null: never disputed); a refund is refused while open or lost. */
  readonly disputeStatus: DisputeStatus | null;
  readonly createdAt: Date;
  readonly updatedAt: Date;
}

/** The column list every ledger query returns, in the shape {@link toLedgerEntry} reads. */
export const ENTRY_COLUMNS = `user_id, id, type, ref_id, amount_minor, currency, fingerprint, params, status,
  failure_reason, response_status, response_body, lease_owner, lease_expires_at, attempt, bank_charge_id,
  settle_failures, settle_last_error, settle_flagged_at, adjusts_entry_id, refunds_entry_id, refunded_minor, dispute_status,
  created_at, updated_at`;

/** The same list qualified by a table alias (for UPDATE ... FROM and joins). */
export function entryColumns(alias: string): string {
  return ENTRY_COLUMNS.split(",")
    .map((column) => `${alias}.${column.trim()}`)
    .join(", ");
}

/** Maps a row of {@link ENTRY_COLUMNS} (as returned by pg) to a {@link LedgerEntry}. */
export function toLedgerEntry(row: Record<string, unknown>): LedgerEntry {
  const responseStatus = row.response_status as number | null;
  return {
    id: row.id as number,
    userId: row.user_id as string,
    type: row.type as LedgerType,
    refId: row.ref_id as string,
    amountMinor: row.amount_minor as number,
    currency: row.currency as string,
    fingerprint: row.fingerprint as string,
    params: row.params as OperationParams,
    status: row.status as EntryStatus,
    failureReason: (row.failure_reason as FailureReason | null) ?? null,
    response: responseStatus === null ? null : { status: responseStatus, body: row.response_body as string },
    leaseOwner: (row.lease_owner as string | null) ?? null,
    leaseExpiresAt: (row.lease_expires_at as Date | null) ?? null,
    fencingToken: row.attempt as number,
    bankChargeId: (row.bank_charge_id as string | null) ?? null,
    settleFailures: row.settle_failures as number,
    settleLastError: (row.settle_last_error as string | null) ?? null,
    settleFlaggedAt: (row.settle_flagged_at as Date | null) ?? null,
    adjustsEntryId: (row.adjusts_entry_id as number | null) ?? null,
    refundsEntryId: (row.refunds_entry_id as number | null) ?? null,
    refundedMinor: (row.refunded_minor as number | undefined) ?? 0,
    disputeStatus: (row.dispute_status as DisputeStatus | null | undefined) ?? null,
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

/** True for `succeeded` and `failed`: a terminal row never changes status again (contract section 2). */
export function isTerminal(status: EntryStatus): boolean {
  return status === "succeeded" || status === "failed";
}
