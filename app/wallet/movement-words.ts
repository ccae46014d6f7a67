/**
 * What a movement was, for people: "Top-up", "Payment to Corner Coffee", "Sent to bo@example.com", "Reward for ad A",
 * "Late bank credit for a failed top-up". The history's lines and the movement page say it the same way; never a raw reference.
 */
import type { StatementLine } from "@/lib/wallet/statement-line";
import { adNameOf } from "@/lib/rewards/offered-ads";

/** The kinds of movement in words, for the history's filter (the API's `type` values). */
export const KIND_WORDS = {
  topup: "Top-ups",
  payment: "Payments",
  reward: "Rewards",
  refund: "Refunds",
  adjustment: "Late bank credits",
  chargeback: "Disputes lost",
  chargeback_reversal: "Disputes reversed",
  payout: "Withdrawals",
  payout_return: "Withdrawals returned",
  transfer: "Transfers sent",
  transfer_in: "Transfers received",
  transfer_reversal: "Transfers reversed",
  transfer_reversal_out: "Received transfers reversed",
} as const;

/** What `line` was, in a few words. */
export function describeMovement(line: Pick<StatementLine, "type" | "refId" | "payee" | "to" | "from">): string {
  switch (line.type) {
    case "topup":
      return "Top-up";
    case "payment":
      return line.payee ? `Payment to ${line.payee}` : "Payment";
    case "reward":
      // The ref id is `<adId>:<day>` (contract section 6); people know the ad, not the key.
      return `Reward for ${adNameOf(line.refId.replace(/:[^:]*$/, ""))}`;
    case "adjustment":
      // A charge the bank confirmed after its top-up had failed (contract section 5).
      return "Late bank credit for a failed top-up";
    case "refund":
      // Money sent back to the bank on a top-up (contract section 11).
      return "Refund of a top-up";
    case "chargeback":
      return "Money taken back: the bank upheld a dispute of a top-up";
    case "chargeback_reversal":
      return "Money returned: the bank reversed a dispute in your favour";
    case "payout":
      return "Withdrawal to a bank account";
    case "payout_return":
      return "Withdrawal returned by the bank";
    case "transfer":
      // Contract section 15: the recipient as the sender wrote the address; the sender's address on the other side.
      return line.to ? `Sent to ${line.to}` : "Money sent";
    case "transfer_in":
      return line.from ? `Received from ${line.from}` : "Money received";
    case "transfer_reversal":
      // Contract section 15: an admin took a transfer back; the money sent came back.
      return "Transfer reversed: the money came back";
    case "transfer_reversal_out":
      return "Transfer received, reversed by the wallet's support";
  }
}

/**
 * A history line's words split in two: a lead that a phone may leave to screen readers ("Payment to ", "Sent to ") and
 * the part every screen shows (the payee, the other user's address), so a line on a 390 px phone names who was paid
 * instead of cutting "Payment to…".
 * Together they are {@link describeMovement}'s words.
 */
export function splitMovementWords(line: Pick<StatementLine, "type" | "refId" | "payee" | "to" | "from">): {
  lead: string;
  main: string;
} {
  if (line.type === "payment" && line.payee) return { lead: "Payment to ", main: line.payee };
  if (line.type === "transfer" && line.to) return { lead: "Sent to ", main: line.to };
  if (line.type === "transfer_in" && line.from) return { lead: "Received from ", main: line.from };
  return { lead: "", main: describeMovement(line) };
}

/** The movement page's address for a readable reference. */
export function movementHref(reference: string): string {
  return `/wallet/movements/${encodeURIComponent(reference)}`;
}
