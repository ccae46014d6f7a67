/**
 * A refund's key at the bank (contract section 11): the ledger's own claim key `(user_id, "refund", refundId)` written
 * as `refund:<userId>:<refundId>`, sent as the `Idempotency-Key` of `POST /refunds`, so the bank's "one refund per
 * key" is the ledger's "one row per key", and a refund webhook finds its row without a lookup table.
 */
import { REF_ID_PATTERN, USER_ID_PATTERN } from "../bank/merchant-ref";

const PREFIX = "refund:";

/**
 * `refund:<userId>:<refundId>`. Throws RangeError when a part is invalid (callers validate input first: a bug).
 * `userId` has no ':' ({@link USER_ID_PATTERN}); `refundId` is a ref id (contract section 1).
 */
export function refundMerchantRefFor(userId: string, refundId: string): string {
  if (!USER_ID_PATTERN.test(userId)) throw new RangeError("refundMerchantRefFor: invalid userId");
  if (!REF_ID_PATTERN.test(refundId)) throw new RangeError("refundMerchantRefFor: invalid refundId");
  return `${PREFIX}${userId}:${refundId}`;
}

/** Splits a refund key back into `{ userId, refundId }`; null when it is not one. Never throws. */
export function parseRefundMerchantRef(merchantRef: string): { userId: string; refundId: string } | null {
  if (typeof merchantRef !== "string" || !merchantRef.startsWith(PREFIX)) return null;
  const rest = merchantRef.slice(PREFIX.length);
  const colon = rest.indexOf(":");
  if (colon < 0) return null;
  const userId = rest.slice(0, colon);
  const refundId = rest.slice(colon + 1);
  if (!USER_ID_PATTERN.test(userId) || !REF_ID_PATTERN.test(refundId)) return null;
  return { userId, refundId };
}
