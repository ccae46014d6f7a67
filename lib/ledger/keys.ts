/**
 * Operation keys (contract section 1). A key is derived on the server from the operation's identity:
 * the user from the session/token (or the verified webhook's merchant reference), the type from the route,
 * and the ref id from the operation itself. Nothing here trims, folds or normalises: a ref id that is not
 * already canonical is refused (case C08).
 */

/**
 * The kinds of money movement. Credits raise the balance, debits lower it. An `adjustment` credits a bank
 * charge that succeeded for a top-up whose row had already failed (contract section 5); its ref id is the charge's.
 * A `refund` gives money back on a succeeded top-up (contract section 11): a debit, reserved when it is claimed.
 * A `chargeback` debits a dispute the bank closed lost, and a `chargeback_reversal` credits it back when the bank
 * reverses it; both are keyed by the bank's dispute id (contract section 12).
 * A `payout` withdraws to a bank account: a debit, held when it is claimed; a `payout_return` credits a paid payout
 * the bank gave back, keyed by the payout's ref id (contract section 14). A `transfer` debits the sender and its
 * `transfer_in` credits the recipient, keyed `transfer:<the sender's entry id>`, in one statement (section 15). An
 * admin's reversal of a succeeded transfer credits the sender back with a `transfer_reversal`, keyed by the transfer's
 * ref id (at most one per transfer), and debits the recipient with a `transfer_reversal_out`, keyed
 * `transfer_reversal:<the sender's reversal entry id>`, in one statement (section 15; docs/decisions/063).
 */
export const LEDGER_TYPES = [
  "topup",
  "reward",
  "payment",
  "adjustment",
  "refund",
  "chargeback",
  "chargeback_reversal",
  "payout",
  "payout_return",
  "transfer",
  "transfer_in",
  "transfer_reversal",
  "transfer_reversal_out",
] as const;
export type LedgerType = (typeof LEDGER_TYPES)[number];

/** Direction of each type: +1 credit, -1 debit (the audit's balance invariant uses the same table). */
export const LEDGER_DIRECTION: Record<LedgerType, 1 | -1> = {
  topup: 1,
  reward: 1,
  payment: -1,
  adjustment: 1,
  refund: -1,
  chargeback: -1,
  chargeback_reversal: 1,
  payout: -1,
  payout_return: 1,
  transfer: -1,
  transfer_in: 1,
  transfer_reversal: 1,
  transfer_reversal_out: -1,
};

/** Contract section 1: 1..128 characters of `[A-Za-z0-9._:-]`, taken exactly as sent. */
export const REF_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
/**
 * Contract section 1: an ad id is 1..117 of the same characters. 117 = 128 - 11, room for the
 * `:YYYY-MM-DD` day suffix that turns it into the reward's ref id (contract section 6).
 */
export const AD_ID_PATTERN = /^[A-Za-z0-9._:-]{1,117}$/;

/** The identity of one operation: at most one ledger row exists per key. */
export interface OperationKey {
  readonly userId: string;
  readonly type: LedgerType;
  readonly refId: string;
}

/** True when `value` is a string usable as a ref id verbatim (contract section 1, case C08). */
export function isValidRefId(value: unknown): value is string {
  return typeof value === "string" && REF_ID_PATTERN.test(value);
}

/**
 * True for `.` and `..`, the only ref ids that are dot segments: RFC 3986 section 5.2.4 and the WHATWG URL standard
 * remove them from a URL path (their `%2e` spellings fall outside the ref id alphabet), so every client, proxy and
 * server turns `/api/v1/topups/..` into `/api/v1/`. `...` and longer runs of dots are ordinary segments.
 */
export function isDotSegment(refId: string): boolean {
  return refId === "." || refId === "..";
}

/**
 * True when `value` may name a new operation: a ref id ({@link isValidRefId}) that is not a dot segment
 * ({@link isDotSegment}), whose top-up page and refund route could never be addressed (case C32,
 * docs/decisions/049-dot-segment-references.md). Rows claimed before this rule keep their keys: reading and
 * {@link operationKey} still take every ref id.
 */
export function isValidNewRefId(value: unknown): value is string {
  return isValidRefId(value) && !isDotSegment(value);
}

/**
 * Builds an operation key. `userId` must come from authentication (never a request body).
 * Throws `TypeError` when the ref id is not valid: callers validate input first and answer 400,
 * so reaching this throw is a bug.
 */
export function operationKey(userId: string, type: LedgerType, refId: string): OperationKey {
  if (userId.length === 0) throw new TypeError("operationKey: empty userId");
  if (!isValidRefId(refId)) throw new TypeError(`operationKey: invalid refId ${JSON.stringify(refId)}`);
  return { userId, type, refId };
}
