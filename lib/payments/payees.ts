/**
 * Who a payment pays (the payee) and what it is for (the note): the bounds both doors validate (the API's body and
 * the pay form, lib/http/operation-requests.ts) and the short list of merchants the pay form offers. Both fields are
 * part of the payment's fingerprinted parameters (lib/payments/create-payment.ts), so the same order id with another
 * payee or note is refused exactly as another amount is (contract section 3; docs/decisions/055).
 */

/** One merchant the pay form offers. */
export interface OfferedPayee {
  /** The payee as stored and shown: the merchant's name. */
  readonly name: string;
}

/**
 * The merchants the pay form offers by name, in the order shown. A small fixed list (a sandbox wallet has no
 * merchant directory); anything else is typed as free text, which both doors accept within the same bounds.
 */
export const OFFERED_PAYEES: readonly OfferedPayee[] = [
  { name: "Corner Coffee" },
  { name: "City Books" },
  { name: "Metro Transit" },
  { name: "Green Grocer" },
];

/**
 * Longest payee, in characters: a merchant's trading name or "Order 12345 at some shop" fits in 80, and a
 * statement line on a 390 px phone shows about 30 of them before it is cut.
 */
export const PAYEE_LENGTH_MAX = 80;

/** Longest note, in characters: a line of text for the payer's own records, as banks allow (140 for SEPA). */
export const NOTE_LENGTH_MAX = 140;

/**
 * Text a person can read on a statement: letters, marks, numbers, punctuation, symbols and the plain space, with no
 * control, format (bidirectional overrides, zero-width characters), line separator or private-use character, and
 * not starting or ending with a space (the text is taken exactly as sent, never trimmed: contract section 1).
 */
export const READABLE_TEXT_PATTERN = /^(?! )[\p{L}\p{M}\p{N}\p{P}\p{S} ]*(?<! )$/u;
