/**
 * An admin's reversal of a succeeded transfer in one round trip under both wallets' locks (contract section 15;
 * docs/decisions/063): one call of the database function ledger_reverse_transfer, which locks the two wallets in
 * user-id order, claims the sender's `transfer_reversal` row (keyed by the transfer's ref id) terminal with its stored
 * first response, and debits the recipient through their own `transfer_reversal_out` row (into debt when their balance
 * no longer covers it) and credits the sender, all in the caller's one statement.
 */
import { decidedClaimOf, type DecidedClaim } from "./decided-claim";
import { ENTRY_COLUMNS } from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";
import type { ResponseTemplate } from "./response-template";

export interface TransferReversalRequest {
  /** A `transfer_reversal` key: the transfer's sender and the transfer's ref id. */
  readonly key: OperationKey;
  /** The transfer's recipient (the owner of its `transfer_in` row), never the sender. */
  readonly recipientId: string;
  /** The sender's fingerprinted parameters (the admin's reason). */
  readonly params: OperationParams;
  /** The recipient's row's parameters; the statement adds the reversal's and the received transfer's entry ids. */
  readonly recipientParams: OperationParams;
  /** 201 with the reversal's view; its time is the template's slot. */
  readonly succeeded: ResponseTemplate;
  /** The audit rows' detail (who reversed it); the statement appends the entry ids it concerns. */
  readonly detail: string;
}

// One call of ledger_reverse_transfer (prisma/functions/ledger_reverse_transfer.sql says what it does and why), in the
// caller's one autocommit statement, arguments by name.
const REVERSE_TRANSFER_SQL = `SELECT ${ENTRY_COLUMNS}
  FROM ledger_reverse_transfer(
    p_user_id => $1, p_ref_id => $2, p_recipient_id => $3, p_fingerprint => $4, p_params => $5::jsonb,
    p_recipient_fingerprint => $6, p_recipient_params => $7::jsonb, p_succeeded_body => $8::text[], p_detail => $9)`;

/** A reversal this statement claimed: the sender's `transfer_reversal` row and its stored first response (201). */
export type ReversedTransfer = DecidedClaim;

/**
 * Claims `request.key` and reverses the transfer of the same sender and ref id in one statement on `db` (a pool in
 * autocommit: once sent, the caller must treat it as possibly committed). Returns the sender's new `succeeded`
 * `transfer_reversal` row and its stored 201: the recipient debited (into debt for what their balance no longer
 * covers) through their `transfer_reversal_out` row, the sender credited (a debt repaid first), both booked through
 * `transfers_in_transit`. Returns null when the key already has a row: the caller reads that row (a loser, or its own
 * earlier attempt). A reversal and a transfer between the same two users wait for each other's wallet lock in one
 * order and never deadlock. Throws database errors as they come, and an error when the transfer is not the sender's
 * succeeded transfer received by `recipientId` (check it before calling).
 */
export async function reverseTransferUnderWalletLocks(
  db: Queryable,
  request: TransferReversalRequest,
): Promise<ReversedTransfer | null> {
  const { key } = request;
  // No row back: the key already had one. The race is decided here, by the claim index.
  return decidedClaimOf(
    db.query(
      prepared("ledger_reverse_transfer", REVERSE_TRANSFER_SQL, [
        key.userId,
        key.refId,
        request.recipientId,
        fingerprint(key.type, request.params),
        JSON.stringify(request.params),
        fingerprint("transfer_reversal_out", request.recipientParams),
        JSON.stringify(request.recipientParams),
        request.succeeded.segments,
        request.detail,
      ]),
    ),
  );
}
