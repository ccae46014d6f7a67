/** Plain words for a row's failure reason, shown to the user (issue 4 item 8). Unknown codes show as is. */
const REASONS: Record<string, string> = {
  declined_by_bank: "the bank declined the payment",
  insufficient_funds: "not enough money in the wallet",
  expired: "it never reached the bank and was cancelled",
};

export function describeFailure(reason: string): string {
  return REASONS[reason] ?? reason;
}
