/**
 * Merchant references: the key a top-up is known by at the bank (contract section 5). It is the ledger's own
 * claim key `(user_id, "topup", ref_id)` written as `topup:<userId>:<refId>`, so a webhook finds its row
 * without a lookup table, and the bank's "one charge per Idempotency-Key" is the ledger's "one row per key".
 * A payout (money sent from the wallet to a bank account, docs/bank-sandbox.md "Payouts") is known the same way
 * as `payout:<userId>:<refId>`; the two kinds are parsed apart, so a payout's reference is never read as a top-up's.
 *
 * - `userId` never contains ':' (it is the first field after the prefix, so the first two colons delimit it).
 * - `refId` follows contract section 1: 1..128 characters of `[A-Za-z0-9._:-]`, taken exactly as sent. It may
 *   itself contain ':', which is why parsing splits on the first two colons only.
 */

/** The ledger type every charge's merchant reference belongs to: only top-ups are charged (contract section 5). */
export const MERCHANT_REF_TYPE = "topup";

/** The type of a payout's merchant reference (docs/bank-sandbox.md "Payouts"). */
export const PAYOUT_MERCHANT_REF_TYPE = "payout";

/** Contract section 1: a ref_id is 1..128 characters of `[A-Za-z0-9._:-]`, never trimmed or folded. */
export const REF_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A user id inside a merchant reference: printable ASCII without spaces and without ':' (a colon would make the
 * reference ambiguous; the reference travels as an HTTP header value, which must be ASCII). 255 characters is far
 * above the ids better-auth issues (32 characters) and keeps the whole reference under 400 characters.
 */
export const USER_ID_PATTERN = /^[\x21-\x39\x3b-\x7e]{1,255}$/;

export interface MerchantRefParts {
  userId: string;
  refId: string;
}

/**
 * Builds the merchant reference of a top-up: `topup:<userId>:<refId>` (contract section 5).
 *
 * @param userId the authenticated user's id (from the session or token, never from a request body); must match
 *   {@link USER_ID_PATTERN} (no ':').
 * @param refId the top-up's own reference; must match {@link REF_ID_PATTERN} (contract section 1).
 * @returns the merchant reference, also used as the bank's `Idempotency-Key`.
 * @throws RangeError when either part is invalid: callers validate request input before this point, so an
 *   invalid part here is a bug, not a user error.
 */
export function merchantRefFor(userId: string, refId: string): string {
  return typedRefFor("merchantRefFor", MERCHANT_REF_TYPE, userId, refId);
}

/**
 * Builds the merchant reference of a payout: `payout:<userId>:<refId>` (docs/bank-sandbox.md "Payouts"), the
 * payout's `Idempotency-Key` at the bank. Same parts and rules as {@link merchantRefFor}.
 *
 * @throws RangeError when either part is invalid (a bug: callers validate request input first).
 */
export function payoutMerchantRefFor(userId: string, refId: string): string {
  return typedRefFor("payoutMerchantRefFor", PAYOUT_MERCHANT_REF_TYPE, userId, refId);
}

function typedRefFor(caller: string, type: string, userId: string, refId: string): string {
  if (!USER_ID_PATTERN.test(userId)) {
    throw new RangeError(`${caller}: userId must be 1..255 printable ASCII characters without spaces or ':'`);
  }
  if (!REF_ID_PATTERN.test(refId)) {
    throw new RangeError(`${caller}: refId must be 1..128 characters of [A-Za-z0-9._:-] (contract section 1)`);
  }
  return `${type}:${userId}:${refId}`;
}

/**
 * Splits a merchant reference back into its user id and ref id. Splits on the first two colons only, because
 * ref ids may contain ':' (contract section 1) while user ids may not.
 *
 * @param merchantRef any string, typically from a verified webhook or the bank's charge list.
 * @returns `{ userId, refId }`, or `null` when the string is not a top-up reference of the documented shape
 *   (wrong prefix, empty or invalid user id, ref id outside contract section 1). Never throws.
 */
export function parseMerchantRef(merchantRef: string): MerchantRefParts | null {
  return parseTypedRef(MERCHANT_REF_TYPE, merchantRef);
}

/**
 * Splits a payout's merchant reference, `payout:<userId>:<refId>`, like {@link parseMerchantRef} does a top-up's.
 *
 * @returns `{ userId, refId }`, or `null` for anything else (a top-up's reference included). Never throws.
 */
export function parsePayoutMerchantRef(merchantRef: string): MerchantRefParts | null {
  return parseTypedRef(PAYOUT_MERCHANT_REF_TYPE, merchantRef);
}

function parseTypedRef(type: string, merchantRef: string): MerchantRefParts | null {
  const prefix = `${type}:`;
  if (typeof merchantRef !== "string" || !merchantRef.startsWith(prefix)) return null;
  const rest = merchantRef.slice(prefix.length);
  const colon = rest.indexOf(":");
  if (colon < 0) return null;
  const userId = rest.slice(0, colon);
  const refId = rest.slice(colon + 1);
  if (!USER_ID_PATTERN.test(userId) || !REF_ID_PATTERN.test(refId)) return null;
  return { userId, refId };
}
