/**
 * A transfer between two users decided in one round trip under both wallets' locks (contract section 15;
 * docs/decisions/061): one call of the database function ledger_decide_transfer, which locks the two wallets in user-id
 * order, claims the sender's row terminal with its stored first response and, on success, debits the sender and
 * claims and credits the recipient's `transfer_in` row, all in the caller's one statement.
 */
import { decidedClaimOf, type DecidedClaim } from "./decided-claim";
import { ENTRY_COLUMNS, type StoredResponse } from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";
import type { ResponseTemplate } from "./response-template";

/** The first responses a transfer may store; the statement picks one by what the locked wallets say. */
export interface TransferResponses {
  /** 201 with the transfer's view; its time is the template's slot. */
  readonly succeeded: ResponseTemplate;
  /** 402 insufficient_funds, stored as given. */
  readonly insufficientFunds: StoredResponse;
  /** 402 debt_outstanding; the sender's debt, as the lock leaves it, is the template's slot. */
  readonly debtOutstanding: ResponseTemplate;
  /** 422 recipient_cannot_receive: the credit would take the recipient past the balance ceiling. */
  readonly recipientCannotReceive: StoredResponse;
}

export interface TransferDecisionRequest {
  /** A `transfer` key: the sender's. */
  readonly key: OperationKey;
  /** The recipient's user id, never the sender's. */
  readonly recipientId: string;
  /** Positive integer in minor units of `currency`. */
  readonly amountMinor: number;
  /** ISO 4217 code. */
  readonly currency: string;
  /** The sender's fingerprinted parameters (amount, currency, recipient, note). */
  readonly params: OperationParams;
  /** The recipient's row's parameters (who sent it, the note); the sender's entry id is added by the statement. */
  readonly recipientParams: OperationParams;
  /** The recipient's balance ceiling, in minor units (MAX_BALANCE_MINOR). */
  readonly maxBalanceMinor: number;
  readonly responses: TransferResponses;
}

// One call of ledger_decide_transfer (prisma/functions/ledger_decide_transfer.sql says what it does and why), in the
// caller's one autocommit statement, arguments by name.
const DECIDE_TRANSFER_SQL = `SELECT ${ENTRY_COLUMNS}
  FROM ledger_decide_transfer(
    p_user_id => $1, p_ref_id => $2, p_recipient_id => $3, p_amount_minor => $4::bigint, p_currency => $5,
    p_fingerprint => $6, p_params => $7::jsonb, p_recipient_fingerprint => $8, p_recipient_params => $9::jsonb,
    p_max_balance_minor => $10::bigint, p_succeeded_body => $11::text[], p_insufficient_body => $12,
    p_debt_body => $13::text[], p_no_room_body => $14)`;

/** A transfer this statement claimed and decided: the sender's terminal row and its stored first response. */
export type DecidedTransfer = DecidedClaim;

/**
 * Claims `request.key` and decides the transfer in one statement on `db` (a pool in autocommit: once sent, the caller
 * must treat it as possibly committed). Returns the sender's new row, terminal, and its stored first response:
 * `succeeded` (201; the sender debited, the recipient's `transfer_in` row credited, a debt of the recipient repaid
 * first), else `failed` with `debt_outstanding` or `insufficient_funds` (402) or `recipient_cannot_receive` (422).
 * Returns null when the key already has a row: the caller reads that row (a loser, or its own earlier attempt).
 * Two transfers in opposite directions wait for each other's wallet lock in one order and never deadlock.
 * Throws database errors as they come (the sender equal to the recipient is an error: refuse it before calling).
 */
export async function decideTransferUnderWalletLocks(
  db: Queryable,
  request: TransferDecisionRequest,
): Promise<DecidedTransfer | null> {
  const { key, responses } = request;
  // No row back: the key already had one. The race is decided here, by the claim index.
  return decidedClaimOf(
    db.query(
      prepared("ledger_decide_transfer", DECIDE_TRANSFER_SQL, [
        key.userId,
        key.refId,
        request.recipientId,
        request.amountMinor,
        request.currency,
        fingerprint(key.type, request.params),
        JSON.stringify(request.params),
        fingerprint("transfer_in", request.recipientParams),
        JSON.stringify(request.recipientParams),
        request.maxBalanceMinor,
        responses.succeeded.segments,
        responses.insufficientFunds.body,
        responses.debtOutstanding.segments,
        responses.recipientCannotReceive.body,
      ]),
    ),
  );
}
