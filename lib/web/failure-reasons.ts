/** Plain words for a row's failure reason, shown to the user (contract section 4: a top-up's status and why it failed). */
import type { FailureReason } from "../ledger";

const REASONS: Record<FailureReason, string> = {
  declined_by_bank: "the bank declined the payment",
  insufficient_funds: "not enough money in the wallet",
  expired: "it never reached the bank and was cancelled",
  balance_limit_exceeded: "the wallet would go over its balance limit, so nothing was charged",
  refund_exceeds_topup: "it was more than what is left to refund of the top-up, so nothing was refunded",
  debt_outstanding: "the wallet owes money from a disputed top-up; add money first",
  topup_disputed: "the bank holds a dispute on the top-up, which returns the money itself, so nothing was refunded",
  payout_limit_exceeded: "it would take today's withdrawals over their daily limit",
  recipient_cannot_receive: "the recipient's wallet cannot take that much",
};

/** The sentence for `reason`; a code from an older version that is not in the union shows as it is. */
export function describeFailure(reason: string): string {
  return (REASONS as Record<string, string>)[reason] ?? reason;
}
