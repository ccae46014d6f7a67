/** The books' accounts and movements in words, for the Books pages (contract section 13). */
import type { LedgerType } from "@/lib/ledger";

/** An account's name as people read it: `bank_clearing` → "Bank clearing". */
export function accountLabel(name: string): string {
  return sentence(name.replaceAll("_", " "));
}

/** `text` with its first letter in capitals, to start a sentence (the chart's descriptions are lower case). */
export function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Each kind of movement, in a word or two. */
export const MOVEMENT_WORDS: Readonly<Record<LedgerType, string>> = {
  topup: "Top-up",
  payment: "Payment",
  reward: "Reward",
  refund: "Refund",
  adjustment: "Late bank credit",
  chargeback: "Dispute lost",
  chargeback_reversal: "Dispute reversed",
  payout: "Withdrawal",
  payout_return: "Withdrawal returned",
  transfer: "Transfer sent",
  transfer_in: "Transfer received",
  transfer_reversal: "Transfer reversed (back to the sender)",
  transfer_reversal_out: "Transfer reversed (taken from the recipient)",
};

/** A refund's three events, in words; `move` says nothing more than the movement's kind. */
export const EVENT_WORDS = {
  move: null,
  reserve: "reserved",
  settle: "settled by the bank",
  release: "failed at the bank: given back",
} as const;
