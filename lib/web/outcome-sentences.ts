/**
 * The one map from operation outcomes to sentences for people. The API answers in problem+json (contract section 3)
 * and the server actions return the same `{ status, body, replayed }`; the pages never print a problem's `detail`
 * (written for programmers: field paths, "minor units", "key"): they print the sentence for its `code`, in the
 * wallet's currency, and say plainly whether money moved.
 *
 * `PROBLEM_SENTENCES` is typed over every problem code, so a code added to lib/problems.ts does not compile until
 * it has its sentence here.
 */
import type { EntryStatus } from "../ledger";
import type { ProblemCode } from "../problems";
import { formatMoney } from "../money";
import { NOTE_LENGTH_MAX, PAYEE_LENGTH_MAX } from "../payments/payees";
import { describeFailure } from "./failure-reasons";
import { STATUS_WORDS } from "./status-words";

/** The operation a form runs. */
export type OperationKind = "topup" | "payment" | "reward" | "refund" | "transfer" | "payout";

/** What a sentence needs to know besides the outcome. */
export interface SentenceContext {
  readonly kind: OperationKind;
  /** The wallet's currency (WALLET_CURRENCY). */
  readonly currency: string;
  /** Largest amount of one operation, minor units (MAX_AMOUNT_MINOR): the amount hint's upper bound. */
  readonly maxAmountMinor: number;
  /** The amount the person asked for, minor units, when the form knows it. */
  readonly amountMinor?: number | null;
  /** Rewards: the ad's name for people ("ad A"). */
  readonly adName?: string;
  /** Rewards: the daily cap, minor units (REWARD_DAILY_CAP_MINOR). */
  readonly rewardCapMinor?: number;
}

/** One sentence, and how the page shows it: `success` and `info` as a status, `error` as an alert. */
export interface Sentence {
  readonly tone: "success" | "info" | "error";
  readonly text: string;
}

/** The outcome a server action returns (contract section 3), as lib/http/respond.ts builds it. */
export interface OutcomeLike {
  readonly status: number;
  readonly body: string;
  readonly replayed: boolean;
}

/** A row's live state, when the page knows a newer one than the stored answer (the top-up form's result). */
export interface LiveState {
  readonly status: EntryStatus;
  readonly failureReason: string | null;
}

const NOUN: Record<OperationKind, string> = {
  topup: "top-up",
  payment: "payment",
  reward: "reward",
  refund: "refund",
  transfer: "transfer",
  payout: "withdrawal",
};

function money(amountMinor: number, context: SentenceContext): string {
  return formatMoney(amountMinor, context.currency);
}

/** "of $25.00" when the amount is known, else "". */
function ofAmount(context: SentenceContext): string {
  return typeof context.amountMinor === "number" ? ` of ${money(context.amountMinor, context)}` : "";
}

/** What did not happen to the money when a request was refused: a refund refunds, a transfer sends, a withdrawal
 * withdraws, the rest charge. */
function nothingMoved(context: SentenceContext): string {
  if (context.kind === "refund") return "nothing was refunded";
  if (context.kind === "payout") return "nothing was withdrawn";
  return context.kind === "transfer" ? "nothing was sent" : "nothing was charged";
}

/** What a duplicate never does twice: a transfer is never "sent" twice, a withdrawal never "made", the rest never
 * "charged". */
function chargedWord(context: SentenceContext): string {
  if (context.kind === "payout") return "made";
  return context.kind === "transfer" ? "sent" : "charged";
}

/** The same as a sentence of its own: "Nothing was sent." for a transfer, "Nothing was withdrawn." for a withdrawal,
 * "Nothing was paid." for the rest. */
function nothingPaid(context: SentenceContext): string {
  if (context.kind === "payout") return "Nothing was withdrawn.";
  return context.kind === "transfer" ? "Nothing was sent." : "Nothing was paid.";
}

/** What the pay form's payee field needs (docs/decisions/055). */
export const PAYEE_HINT = `Say who you are paying: pick a merchant or type a name of up to ${PAYEE_LENGTH_MAX} characters, with no space at either end. Nothing was paid.`;
/** What the pay form's and the send form's note field accepts. */
export const NOTE_HINT = `A note is optional: up to ${NOTE_LENGTH_MAX} characters of plain text, with no space at either end. Nothing was paid.`;
/** What the send form's note field accepts (the pay form's rule; contract section 15). */
export const TRANSFER_NOTE_HINT = `A note is optional: up to ${NOTE_LENGTH_MAX} characters of plain text, with no space at either end. Nothing was sent.`;
/** What the send form's recipient field needs (contract section 15). */
export const RECIPIENT_HINT =
  "Enter the email address the person signs in with, such as bo@example.com. Nothing was sent.";

/** What the withdraw form's account number field accepts (contract section 14: 10 digits, the last a check digit). */
export const DESTINATION_FORMAT = "10 digits, such as 4000000002";
/** The sentence for an account number the bank would not take. */
export const DESTINATION_HINT = `That account number is not valid: it has ${DESTINATION_FORMAT}, the last digit a check digit. Check it on your bank statement; nothing was withdrawn.`;

/** What the amount field accepts, with an example. */
export function amountHint(context: Pick<SentenceContext, "currency" | "maxAmountMinor">): string {
  const smallest = formatMoney(1, context.currency);
  const largest = formatMoney(context.maxAmountMinor, context.currency);
  return `Enter an amount from ${smallest} to ${largest}, such as ${formatMoney(1250, context.currency).replace(/^\D+/, "")}.`;
}

/** The words for the parameters a reused reference can differ in (the `fields` of a 422 idempotency_key_reused). */
const FIELD_WORDS: Readonly<Record<string, string>> = {
  amount: "amount",
  currency: "currency",
  payee: "payee",
  note: "note",
  to: "recipient",
  destination: "account number",
};

/** "amount", "payee and note", "amount, payee and note": the fields named in words, in the order given. */
function fieldsInWords(fields: readonly string[]): string {
  const words = fields.map((field) => FIELD_WORDS[field] ?? "detail");
  const unique = [...new Set(words)];
  if (unique.length <= 1) return unique[0] ?? "amount";
  return `${unique.slice(0, -1).join(", ")} and ${unique[unique.length - 1]}`;
}

/** The button that starts a new operation on the wallet page's forms. */
const SUBMIT_WORDS: Partial<Record<OperationKind, string>> = {
  topup: "Top up",
  payment: "Pay",
  transfer: "Send",
  payout: "Withdraw",
};

/**
 * A form's reference already used, with other parameters (contract section 3: 422 idempotency_key_reused). On the
 * wallet page this is a stale tab: another tab (or an earlier send of this one) used the reference the form was drawn
 * with, for the differing `fields`. What happened is said as it is: this one was not made, nothing of it was charged,
 * and the answer came with the page drawn again, whose form carries a new reference, so pressing the button again
 * makes it (docs/decisions/055). Elsewhere (a refund's own id) the sentence says only what happened.
 */
function reusedReferenceSentence(c: SentenceContext, fields: readonly string[]): string {
  const noun = NOUN[c.kind];
  const earlier = `This form had already been used, in another tab or window, for a ${noun} with a different ${fieldsInWords(fields)}`;
  const submit = SUBMIT_WORDS[c.kind];
  if (!submit) return `${earlier}, so this ${noun}${ofAmount(c)} was not made; ${nothingMoved(c)}.`;
  const nothingOfIt =
    c.kind === "transfer"
      ? "nothing of it was sent"
      : c.kind === "payout"
        ? "nothing of it was withdrawn"
        : "nothing of it was charged";
  return `${earlier}, so this ${noun}${ofAmount(c)} was not made and ${nothingOfIt}. The form is ready for a new one: press ${submit} again to make it.`;
}

/**
 * A sentence for every problem code (contract sections 3 and 9). Each says what happened to the money; none
 * mentions a field path, a unit or a key.
 */
export const PROBLEM_SENTENCES: Readonly<Record<ProblemCode, (context: SentenceContext) => string>> = {
  invalid_request: (c) => `This form is out of date. Reload the page and try again; ${nothingMoved(c)}.`,
  invalid_signature: () => "The request was refused; nothing changed.",
  unauthenticated: (c) => `You are signed out. Sign in again; ${nothingMoved(c)}.`,
  insufficient_funds: (c) =>
    `Not enough money in your wallet for this ${NOUN[c.kind]}${ofAmount(c)}. ${nothingPaid(c)}`,
  // Contract section 12: a chargeback left a debt that payments wait for.
  debt_outstanding: (c) =>
    c.kind === "refund"
      ? "This wallet owes money because a bank took back a disputed top-up. Nothing was refunded; refund once the debt is repaid."
      : c.kind === "payout"
        ? "Your wallet owes money because a bank took back a disputed top-up. Nothing was withdrawn; withdraw once a top-up has repaid it."
        : `Your wallet owes money because a bank took back a disputed top-up. Add money first; ${nothingPaid(c).toLowerCase()}`,
  // Case C15: the credit would not fit under the wallet's balance ceiling (MAX_BALANCE_MINOR).
  balance_limit_exceeded: (c) =>
    `This ${NOUN[c.kind]}${ofAmount(c)} would take your wallet over its balance limit, so nothing was charged or credited.`,
  forbidden: (c) => `This request was refused. Reload the page and try again; ${nothingMoved(c)}.`,
  not_found: () => "We could not find that. Reload the page.",
  method_not_allowed: () => "This request was refused. Reload the page and try again.",
  request_in_progress: (c) =>
    `Your ${NOUN[c.kind]} is still being processed. Wait a few seconds: it will not be ${chargedWord(c)} twice.`,
  token_limit_reached: () => "You have the most tokens allowed. Revoke one you no longer use first.",
  // Contract section 11: only a top-up the bank confirmed can be refunded.
  topup_not_refundable: () =>
    "This top-up cannot be refunded: only a top-up that went through can be. Nothing was refunded.",
  // Contract section 15: only a transfer that went through moved money to take back.
  transfer_not_reversible: () =>
    "This transfer cannot be reversed: it did not go through, so it moved no money. Nothing was taken back.",
  // Contract section 11: refunds of a top-up never add up to more than the top-up.
  refund_exceeds_topup: (c) =>
    `This refund${ofAmount(c)} is more than what is left to refund of the top-up, so nothing was refunded.`,
  // Contract section 11, case C26: a dispute open or lost on the top-up returns the cardholder's money itself.
  topup_disputed: () =>
    "The bank holds a dispute on this top-up, which returns the money to the card itself, so nothing was refunded.",
  // Contract section 15: a transfer names someone with an account, and never its sender.
  recipient_unknown: () => "No account has this email address. Check it with the person; nothing was sent.",
  transfer_to_self: () => "This is your own email address: you cannot send money to yourself. Nothing was sent.",
  recipient_cannot_receive: () =>
    "The recipient's wallet cannot take this amount right now. Nothing was sent; try a smaller amount.",
  // Contract section 14: the daily withdrawal limit (PAYOUT_DAILY_LIMIT_MINOR).
  payout_limit_exceeded: (c) =>
    `This withdrawal${ofAmount(c)} would pass today's withdrawal limit, so nothing was withdrawn. Try a smaller amount or come back tomorrow.`,
  payload_too_large: (c) => `The request was too large; ${nothingMoved(c)}.`,
  unsupported_media_type: () => "The request was refused. Reload the page and try again.",
  idempotency_key_reused: (c) => reusedReferenceSentence(c, ["amount"]),
  daily_cap_reached: (c) =>
    `You have reached today's reward limit${
      typeof c.rewardCapMinor === "number" ? ` of ${money(c.rewardCapMinor, c)}` : ""
    }. Nothing more can be credited today; come back tomorrow.`,
  // Transfers have a second throttle (contract section 15): too many addresses with no account in 15 minutes.
  rate_limited: (c) =>
    c.kind === "transfer"
      ? "Too many transfers tried in a short time, or too many addresses with no account. Wait a few minutes, then try again; nothing was sent."
      : `Too many new ${NOUN[c.kind]}s in a minute. Wait a moment, then try again; ${nothingMoved(c)}.`,
  internal_error: (c) =>
    `Something went wrong on our side. Try again: the same ${NOUN[c.kind]} is never ${chargedWord(c)} twice.`,
  cap_store_unavailable: () => "Rewards are unavailable right now, so nothing was credited. Try again shortly.",
  service_unavailable: () => "The service is busy right now. Try again shortly; nothing was charged twice.",
};

function parseBody(body: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body);
    return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** The sentence for a problem body: by its code; an amount refused by the form gets the amount hint. */
function problemSentence(body: Record<string, unknown>, context: SentenceContext): Sentence {
  const code = body.code as ProblemCode;
  if (code === "invalid_request" && body.field === "amount") return { tone: "error", text: amountHint(context) };
  if (code === "invalid_request" && body.field === "payee") return { tone: "error", text: PAYEE_HINT };
  if (code === "invalid_request" && body.field === "note") {
    return { tone: "error", text: context.kind === "transfer" ? TRANSFER_NOTE_HINT : NOTE_HINT };
  }
  if (code === "invalid_request" && body.field === "to") return { tone: "error", text: RECIPIENT_HINT };
  if (code === "invalid_request" && body.field === "destination") return { tone: "error", text: DESTINATION_HINT };
  if (code === "idempotency_key_reused" && Array.isArray(body.fields)) {
    const fields = body.fields.filter((field): field is string => typeof field === "string");
    return { tone: "error", text: reusedReferenceSentence(context, fields) };
  }
  const sentence = PROBLEM_SENTENCES[code];
  return {
    tone: "error",
    text: sentence ? sentence(context) : "Something went wrong. Reload the page and try again.",
  };
}

interface Movement {
  readonly amount?: unknown;
  /** A transfer's recipient, as the sender wrote the address. */
  readonly to?: unknown;
  readonly status?: unknown;
  readonly failureReason?: unknown;
  readonly destination?: unknown;
}

/** "account ending 0002": the last four digits of a payout's destination, never the whole number. */
function accountWords(destination: unknown): string {
  return typeof destination === "string" && destination.length >= 4
    ? `the account ending ${destination.slice(-4)}`
    : "your bank account";
}

/**
 * A failed withdrawal (`what`: e.g. "Withdrawal of $12.00") in words (contract section 14): the bank did not pay it
 * out, and the held money is back in the balance; or it was refused before anything was held (`reason` one of the
 * claim's stored refusals), and nothing was withdrawn.
 */
export function payoutFailedSentence(what: string, reason: string | null): string {
  if (reason === null || reason === "declined_by_bank")
    return `${what} failed: the bank did not pay it out. The money is back in your balance.`;
  return `${what} was not made: ${describeFailure(reason)}. Nothing was withdrawn.`;
}

/** The sentence for a row's state: what happened to the money. */
function movementSentence(
  kind: OperationKind,
  movement: Movement,
  live: LiveState | undefined,
  context: SentenceContext,
): Sentence {
  const amount = typeof movement.amount === "number" ? money(movement.amount, context) : "";
  const status = live?.status ?? (movement.status as EntryStatus);
  const reason = live ? live.failureReason : typeof movement.failureReason === "string" ? movement.failureReason : null;
  const what =
    kind === "topup"
      ? `Top-up of ${amount}`
      : kind === "payment"
        ? `Payment of ${amount}`
        : kind === "refund"
          ? `Refund of ${amount}`
          : kind === "transfer"
            ? `Transfer of ${amount}`
            : kind === "payout"
              ? `Withdrawal of ${amount}`
              : "Reward";
  switch (status) {
    case "succeeded":
      if (kind === "topup") return { tone: "success", text: `${what} succeeded: ${amount} was added to your wallet.` };
      if (kind === "payment") return { tone: "success", text: `Paid ${amount}.` };
      // Contract section 15: the recipient's wallet was credited in the same statement that debited this one.
      if (kind === "transfer") {
        const to = typeof movement.to === "string" ? ` to ${movement.to}` : "";
        return { tone: "success", text: `Sent ${amount}${to}. It is in their wallet now.` };
      }
      // Contract section 11: the money left the wallet when the refund was made; the bank has now sent it back.
      if (kind === "refund") return { tone: "success", text: `${what} succeeded: the bank sent it back to the card.` };
      if (kind === "payout")
        return { tone: "success", text: `Paid: ${amount} was sent to ${accountWords(movement.destination)}.` };
      return { tone: "success", text: `+${amount} credited${context.adName ? ` for ${context.adName}` : ""}.` };
    case "failed": {
      // A withdrawal the bank failed gave its held money back; one refused at its claim held nothing (section 14).
      if (kind === "payout") return { tone: "error", text: payoutFailedSentence(what, reason) };
      const why = reason ? `: ${describeFailure(reason)}` : "";
      const moved =
        kind === "topup"
          ? "Nothing was charged."
          : kind === "payment"
            ? "Nothing was paid."
            : kind === "transfer"
              ? "Nothing was sent."
              : kind === "refund"
                ? "The money is back in the wallet."
                : "";
      return { tone: "error", text: `${what} failed${why}. ${moved}`.trim() };
    }
    case "initiated":
    case "processing":
      if (kind === "payout")
        return {
          tone: "info",
          text: `${what} to ${accountWords(movement.destination)}: processing, waiting for the bank. The money is held from your balance until the bank pays it.`,
        };
      return {
        tone: "info",
        text: `${what}: ${STATUS_WORDS[status].label.toLowerCase()}, ${STATUS_WORDS[status].meaning}.`,
      };
    default:
      return { tone: "info", text: `${what} was sent.` };
  }
}

/**
 * The sentence a money or reward form shows for an outcome `{ status, body, replayed }`. `live` is the row's newer
 * state when the page has one (a top-up followed after the bank answered). A replay says that nothing was done
 * twice; a reward's replay says "already credited today" (contract section 6, case C21).
 */
export function describeOutcome(outcome: OutcomeLike, context: SentenceContext, live?: LiveState): Sentence {
  const body = parseBody(outcome.body);
  if (!body) return { tone: "error", text: "Something went wrong. Reload the page and try again." };
  if (outcome.status >= 400) {
    const sentence = problemSentence(body, context);
    // A stored refusal (402) sent again is still the same refusal.
    return sentence;
  }
  const movement = (body.topup ?? body.payment ?? body.reward ?? body.refund ?? body.transfer ?? body.payout) as
    | Movement
    | undefined;
  if (!movement) return { tone: "info", text: "Done." };
  if (context.kind === "reward" && outcome.replayed) {
    // Contract section 6, case C21: one reward per ad per local day; a second click replays the first.
    const amount = typeof movement.amount === "number" ? ` (+${money(movement.amount, context)})` : "";
    return { tone: "info", text: `Already credited today${amount}: nothing more for this ad until tomorrow.` };
  }
  const sentence = movementSentence(context.kind, movement, live, context);
  if (!outcome.replayed) return sentence;
  return { ...sentence, text: `${sentence.text} (You had already sent this form; it was not done twice.)` };
}
