/**
 * A statement's line (contract section 13.4; docs/decisions/058): one posting to the caller's wallet account, with
 * the time it was booked, the movement's readable reference, what kind of movement it was, the counter-party in plain
 * words (the other leg's account, as `ledger_journal_rules` names it), the signed amount and the running balance
 * after it. The shape, the words, the range of days and the microsecond time text live here, for the statement's
 * API, its page and its CSV export alike.
 */
import { z } from "zod";
import { LEDGER_TYPES, type LedgerType } from "../ledger";
import { readableReference } from "./readable-reference";

/** The house accounts a wallet posting can have as its counter-party (contract section 13.1). */
export const COUNTERPARTY_ACCOUNTS = [
  "bank_clearing",
  "refunds_in_flight",
  "rewards_funded",
  "merchants_payable",
  "payouts_in_flight",
  "transfers_in_transit",
] as const;
export type CounterpartyAccount = (typeof COUNTERPARTY_ACCOUNTS)[number];

/** The events that post to a wallet (a refund's `settle` moves money between house accounts only). */
const WALLET_EVENTS = ["move", "reserve", "release"] as const;

/** `GET /api/v1/statement`'s line: one posting to the caller's wallet account. */
export const statementPostingSchema = z
  .strictObject({
    postedAt: z.string().meta({
      description:
        "When it was booked, in UTC with microseconds (`2026-12-02T08:15:30.123456Z`). " +
        "`GET /api/v1/wallet?at=` this instant answers `balanceAfter`.",
      example: "2026-12-02T08:15:30.123456Z",
    }),
    reference: z
      .string()
      .meta({ description: "The movement's readable reference (`PY-7K3Q-9D2M`).", example: "PY-7K3Q-9D2M" }),
    kind: z.enum(LEDGER_TYPES).meta({ description: "The movement's kind (the ledger entry's type)." }),
    event: z.enum(WALLET_EVENTS).meta({
      description:
        "`move`; for a refund, `reserve` (taken from the wallet) or `release` (the bank failed it: given back).",
    }),
    description: z.string().meta({ description: "The kind in words: `Payment`, `Refund failed, money back`..." }),
    counterparty: z.string().meta({
      description:
        "Who the money came from or went to, in words: `Bank`, the payee, `Rewards`, `Refunds in flight`; for a " +
        "transfer sent, the recipient's email address as the sender wrote it, and for a transfer received, the " +
        "sender's address.",
      example: "Corner Coffee",
    }),
    counterpartyAccount: z
      .enum(COUNTERPARTY_ACCOUNTS)
      .meta({ description: "The other leg's account (contract 13.1)." }),
    payee: z.string().optional().meta({ description: "A payment's payee, when it was made with one." }),
    note: z
      .string()
      .optional()
      .meta({ description: "A payment's or a transfer's note (sent or received), when it was made with one." }),
    amount: z.int().meta({ description: "Signed integer minor units: what the wallet account gained (minus: lost)." }),
    balanceAfter: z.int().meta({
      description: "The wallet account after it, signed integer minor units: the balance, or minus the debt.",
    }),
    currency: z.string().regex(/^[A-Z]{3}$/),
  })
  .meta({ id: "StatementPosting", description: "One posting to the caller's wallet account." });

export type StatementPosting = z.infer<typeof statementPostingSchema>;

/** A row of {@link STATEMENT_POSTINGS_SQL}: bigints as text, the time as microseconds since the epoch. */
export interface StatementPostingRow {
  readonly id: string;
  readonly posted_us: string;
  readonly entry_id: string;
  readonly type: LedgerType;
  readonly event: (typeof WALLET_EVENTS)[number];
  readonly amount: string;
  readonly balance_after: string;
  readonly currency: string;
  readonly payee: string | null;
  readonly note: string | null;
  /** A transfer's other user: the recipient's address (`transfer`) or the sender's (`transfer_in`). */
  readonly party: string | null;
  readonly counterparty: CounterpartyAccount;
}

/**
 * The caller's wallet postings in `[$2, $3)` (timestamptz text), oldest first by `(posted_at, id)`, after the
 * position `($4, $5)` when one is given, at most `$6`. The page is cut first, from the postings alone, so its read is
 * `ledger_postings_wallet_idx` forward from the range's start (or the cursor), in the index's order, stopping at the
 * page's end (every condition binds `user_id` and `account = 'wallet'`); only then is each line joined to its entry
 * (payee, note, a transfer's other user, type) and its rule, whose other account is the counter-party (`ledger_journal_rules`, the one place
 * of that rule). Joined first, a planner that thinks the user's entries few could read them all and sort.
 * The time leaves as exact microseconds: a JavaScript Date would round it to the millisecond.
 */
export const STATEMENT_POSTINGS_SQL = `
WITH page AS MATERIALIZED (
  SELECT p.id, p.posted_at, p.entry_id, p.event, p.amount_minor, p.balance_after_minor, p.currency
    FROM ledger_postings p
   WHERE p.user_id = $1 AND p.account = 'wallet'
     AND p.posted_at >= $2::timestamptz AND p.posted_at < $3::timestamptz
     AND ($4::timestamptz IS NULL OR (p.posted_at, p.id) > ($4::timestamptz, $5::bigint))
   ORDER BY p.posted_at, p.id
   LIMIT $6
)
SELECT p.id::text AS id, (extract(epoch FROM p.posted_at) * 1000000)::bigint::text AS posted_us,
       p.entry_id::text AS entry_id, e.type, p.event, p.amount_minor::text AS amount,
       p.balance_after_minor::text AS balance_after, p.currency,
       CASE WHEN e.type = 'payment' THEN e.params->>'payee' END AS payee,
       CASE WHEN e.type IN ('payment', 'transfer', 'transfer_in') THEN e.params->>'note' END AS note,
       CASE e.type WHEN 'transfer' THEN e.params->>'to' WHEN 'transfer_in' THEN e.params->>'from' END AS party,
       CASE WHEN r.from_account = 'wallet' THEN r.to_account ELSE r.from_account END AS counterparty
  FROM page p
  JOIN ledger_entries e ON e.user_id = $1 AND e.id = p.entry_id
  JOIN ledger_journal_rules r ON r.type = e.type AND r.event = p.event
 ORDER BY p.posted_at, p.id`;

/**
 * The wallet account of user `$1` at the instant `$2` (timestamptz text): one read of ledger_postings_wallet_idx
 * (user_id, posted_at, id) backwards from the instant; the newest posting at or before it carries the account after
 * it. The instant is compared as text PostgreSQL parses, so its microseconds count (a Date would round them).
 */
export const WALLET_ACCOUNT_AT_SQL = `
SELECT balance_after_minor::text AS account, currency FROM ledger_postings
 WHERE user_id = $1 AND account = 'wallet' AND posted_at <= $2::timestamptz
 ORDER BY posted_at DESC, id DESC
 LIMIT 1`;

const KIND_WORDS: Readonly<Record<LedgerType, string>> = {
  topup: "Top-up",
  payment: "Payment",
  reward: "Reward",
  adjustment: "Late bank credit",
  refund: "Refund to the card",
  chargeback: "Dispute lost",
  chargeback_reversal: "Dispute reversed",
  payout: "Withdrawal",
  payout_return: "Withdrawal returned",
  transfer: "Transfer sent",
  transfer_in: "Transfer received",
  transfer_reversal: "Transfer reversed",
  transfer_reversal_out: "Received transfer reversed",
};

const COUNTERPARTY_WORDS: Readonly<Record<CounterpartyAccount, string>> = {
  bank_clearing: "Bank",
  refunds_in_flight: "Refunds in flight",
  rewards_funded: "Rewards",
  merchants_payable: "Merchant",
  payouts_in_flight: "Withdrawals in flight",
  transfers_in_transit: "Another user",
};

/** The other side in words: a payment's payee, a transfer's other user, else the house account's name. */
function counterpartyWords(row: StatementPostingRow): string {
  if (row.counterparty === "merchants_payable" && row.payee) return row.payee;
  if (row.counterparty === "transfers_in_transit" && row.party) return row.party;
  return COUNTERPARTY_WORDS[row.counterparty];
}

/** The statement line of `row`: its readable reference, words, and amounts as numbers (all below 2^53). */
export function statementPostingOf(row: StatementPostingRow): StatementPosting {
  const payee = row.payee ?? undefined;
  return {
    postedAt: isoMicros(BigInt(row.posted_us)),
    reference: readableReference(row.type, Number(row.entry_id)),
    kind: row.type,
    event: row.event,
    description: row.type === "refund" && row.event === "release" ? "Refund failed, money back" : KIND_WORDS[row.type],
    counterparty: counterpartyWords(row),
    counterpartyAccount: row.counterparty,
    ...(payee === undefined ? {} : { payee }),
    ...(row.note === null ? {} : { note: row.note }),
    amount: Number(row.amount),
    balanceAfter: Number(row.balance_after),
    currency: row.currency,
  };
}

const US_PER_MS = 1000n;

/**
 * `us` microseconds since the Unix epoch as ISO-8601 UTC text with six decimals (`2026-12-02T08:15:30.123456Z`):
 * PostgreSQL's `timestamptz` resolution, which a Date (milliseconds) would round. Floors toward the past.
 */
export function isoMicros(us: bigint): string {
  const ms = us >= 0n ? us / US_PER_MS : -((-us + US_PER_MS - 1n) / US_PER_MS);
  const rest = us - ms * US_PER_MS;
  const text = new Date(Number(ms)).toISOString();
  return `${text.slice(0, -1)}${String(rest).padStart(3, "0")}Z`;
}

/** Microseconds since the epoch of `postedAt` text written by {@link isoMicros}. */
export function microsOf(postedAt: string): bigint {
  const ms = BigInt(Date.parse(`${postedAt.slice(0, 23)}Z`));
  return ms * US_PER_MS + BigInt(postedAt.slice(23, 26));
}

const DAY_MS = 86_400_000;

/** A statement's range: its first and last UTC day (`YYYY-MM-DD`, both included), already validated. */
export interface StatementRange {
  readonly from: string;
  readonly to: string;
}

/** The instants that bound `range`: its first day's start and the start of the day after its last (excluded). */
export function rangeInstants(range: StatementRange): { startIso: string; endIso: string } {
  const start = Date.parse(`${range.from}T00:00:00.000Z`);
  const end = Date.parse(`${range.to}T00:00:00.000Z`) + DAY_MS;
  return { startIso: new Date(start).toISOString(), endIso: new Date(end).toISOString() };
}
