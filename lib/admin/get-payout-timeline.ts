import { payoutMerchantRefFor, USER_ID_PATTERN } from "../bank/merchant-ref";
import { pool } from "../db";
import { findEntryByKey, isValidRefId, type LedgerEntry, operationKey } from "../ledger";
import type { TimelineTransition, TimelineWebhook } from "./get-topup-timeline";
import { type AdminPayoutView, adminPayoutView } from "./list-admin-payouts";

/** One leg of the books a payout (or its return) moved: the journal event, the account and what it gained. */
export interface TimelinePosting {
  /** `reserve` (wallet → payouts_in_flight), `settle` (→ bank_clearing), `release` (back to the wallet), `move`. */
  event: string;
  account: string;
  /** Signed minor units: what the account gained. */
  amountMinor: number;
  currency: string;
  postedAt: string;
}

/** The payout's `payout_return` entry: the receiving bank sent the money back and the wallet was credited. */
export interface TimelineReturn {
  refId: string;
  amount: number;
  currency: string;
  status: string;
  /** The bank's payout id the return names. */
  payoutId: string | null;
  createdAt: string;
  transitions: TimelineTransition[];
  postings: TimelinePosting[];
}

export interface PayoutTimeline {
  payout: AdminPayoutView & {
    leaseOwner: string | null;
    fencingToken: number;
    settleFailures: number;
    settleLastError: string | null;
  };
  merchantRef: string;
  /** The stored first response (status and exact body), or null when none was stored yet. */
  response: { status: number; body: string } | null;
  transitions: TimelineTransition[];
  postings: TimelinePosting[];
  webhooks: TimelineWebhook[];
  returned: TimelineReturn | null;
}

/** Most lines of each list: a payout has a handful; 200 bounds a pathological one without hiding a normal one. */
const TIMELINE_LINES_MAX = 200;

const TRANSITIONS_SQL = `
SELECT at, from_status, to_status, actor, attempt, detail
  FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id LIMIT $3`;

const POSTINGS_SQL = `
SELECT event, account, amount_minor::text, currency, posted_at
  FROM ledger_postings WHERE user_id = $1 AND entry_id = $2 ORDER BY posted_at, id LIMIT $3`;

const WEBHOOKS_SQL = `
SELECT event_id, type, charge_id, amount_minor, currency, outcome, deliveries, first_seen_at, last_seen_at
  FROM bank_webhook_events WHERE merchant_ref = $1 ORDER BY first_seen_at, event_id LIMIT $2`;

const USER_EMAIL_SQL = `SELECT email FROM "user" WHERE id = $1`;

/**
 * Everything the database knows about one payout, for the admin timeline page (contract section 14): the row, its
 * audit transitions, the postings it made (the hold, then its settlement or release), the webhook deliveries recorded
 * for its merchant reference, and its return with the return's own transitions and postings. Another user's payout
 * is fine: this is for admins. A user id outside USER_ID_PATTERN, an invalid ref id or an unknown key gives null (the
 * page answers "not found") before any query. Throws database errors.
 */
export async function getPayoutTimeline(userId: string, refId: string): Promise<PayoutTimeline | null> {
  if (!USER_ID_PATTERN.test(userId) || !isValidRefId(refId)) return null;
  const entry = await findEntryByKey(operationKey(userId, "payout", refId));
  if (!entry) return null;
  const merchantRef = payoutMerchantRefFor(userId, refId);
  const [transitions, postings, webhooks, owner, returnEntry] = await Promise.all([
    transitionsOf(entry),
    postingsOf(entry),
    pool().query(WEBHOOKS_SQL, [merchantRef, TIMELINE_LINES_MAX]),
    pool().query<{ email: string }>(USER_EMAIL_SQL, [userId]),
    findEntryByKey(operationKey(userId, "payout_return", refId)),
  ]);
  return {
    payout: {
      ...adminPayoutView(entry, owner.rows[0]?.email ?? "", returnEntry?.createdAt ?? null),
      leaseOwner: entry.leaseOwner,
      fencingToken: entry.fencingToken,
      settleFailures: entry.settleFailures,
      settleLastError: entry.settleLastError,
    },
    merchantRef,
    response: entry.response,
    transitions,
    postings,
    webhooks: webhooks.rows.map(webhookLine),
    returned: returnEntry ? await timelineReturn(returnEntry) : null,
  };
}

async function transitionsOf(entry: LedgerEntry): Promise<TimelineTransition[]> {
  const result = await pool().query(TRANSITIONS_SQL, [entry.userId, entry.id, TIMELINE_LINES_MAX]);
  return result.rows.map((row) => ({
    at: (row.at as Date).toISOString(),
    from: (row.from_status as string | null) ?? null,
    to: row.to_status as string,
    actor: row.actor as string,
    fencingToken: row.attempt as number,
    detail: (row.detail as string | null) ?? null,
  }));
}

async function postingsOf(entry: LedgerEntry): Promise<TimelinePosting[]> {
  const result = await pool().query(POSTINGS_SQL, [entry.userId, entry.id, TIMELINE_LINES_MAX]);
  return result.rows.map((row) => ({
    event: row.event as string,
    account: row.account as string,
    amountMinor: Number(row.amount_minor),
    currency: row.currency as string,
    postedAt: (row.posted_at as Date).toISOString(),
  }));
}

function webhookLine(row: Record<string, unknown>): TimelineWebhook {
  return {
    eventId: row.event_id as string,
    type: row.type as string,
    chargeId: (row.charge_id as string | null) ?? null,
    amount: (row.amount_minor as number | null) ?? null,
    currency: (row.currency as string | null) ?? null,
    outcome: row.outcome as string,
    deliveries: row.deliveries as number,
    firstSeenAt: (row.first_seen_at as Date).toISOString(),
    lastSeenAt: (row.last_seen_at as Date).toISOString(),
  };
}

async function timelineReturn(entry: LedgerEntry): Promise<TimelineReturn> {
  const [transitions, postings] = await Promise.all([transitionsOf(entry), postingsOf(entry)]);
  const payoutId = entry.params.payoutId;
  return {
    refId: entry.refId,
    amount: entry.amountMinor,
    currency: entry.currency,
    status: entry.status,
    payoutId: typeof payoutId === "string" ? payoutId : null,
    createdAt: entry.createdAt.toISOString(),
    transitions,
    postings,
  };
}
