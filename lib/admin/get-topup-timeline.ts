import { pool } from "../db";
import { env } from "../env";
import { getCharge, type BankCharge } from "../bank/client";
import { merchantRefFor, USER_ID_PATTERN } from "../bank/merchant-ref";
import { findEntryByKey, isValidRefId, topupView, type LedgerEntry, type TopupView } from "../ledger";
import { findAdjustmentOf } from "../topups/credit-adjustment";

/** One line of a row's audit trail (ledger_transitions). A take-over has from = to and says so in `detail`. */
export interface TimelineTransition {
  at: string;
  from: string | null;
  to: string;
  actor: string;
  fencingToken: number;
  detail: string | null;
}

/** One webhook event the bank delivered for the row's merchant reference, with what the app did with it. */
export interface TimelineWebhook {
  eventId: string;
  type: string;
  chargeId: string | null;
  amount: number | null;
  currency: string | null;
  outcome: string;
  deliveries: number;
  firstSeenAt: string;
  lastSeenAt: string;
}

/** What the bank says now about the row's merchant reference. */
export type TimelineBankView =
  | { kind: "charge"; charge: BankCharge }
  | { kind: "no_charge" }
  | { kind: "unreachable"; reason: string };

export interface TopupTimeline {
  topup: TopupView & {
    userId: string;
    /** The owner's email (null if the account is gone). */
    userEmail: string | null;
    chargeId: string | null;
    leaseOwner: string | null;
    leaseExpiresAt: string | null;
    fencingToken: number;
    /**
     * What is left to refund now, minor units: the amount less the refunds that did not fail (the refund
     * reservation), or 0 while a dispute of its charge is open or lost (contract sections 11 and 12, case C26).
     */
    refundableMinor: number;
  };
  merchantRef: string | null;
  /** The stored first response (status and exact body), or null when none was stored yet. */
  response: { status: number; body: string } | null;
  transitions: TimelineTransition[];
  webhooks: TimelineWebhook[];
  bank: TimelineBankView;
  /**
   * The `adjustment` entry that credited this failed top-up's charge after it failed (contract section 5), or null.
   */
  adjustment: TimelineAdjustment | null;
}

/** An adjustment linked to the top-up: its amount, the charge it credits, its status and when it was made. */
export interface TimelineAdjustment {
  entryId: number;
  amount: number;
  currency: string;
  chargeId: string | null;
  status: string;
  createdAt: string;
}

/**
 * Most lines of each list on the timeline. A row has a handful of transitions and webhook events; 200 bounds a
 * pathological one (e.g. thousands of redeliveries of distinct events) without hiding anything normal.
 */
const TIMELINE_LINES_MAX = 200;

/**
 * Bank lookups from the admin page wait at most 2 s: the page must render even when the bank hangs (the rest of
 * the timeline comes from the database).
 */
const TIMELINE_BANK_TIMEOUT_MS = 2000;

const TRANSITIONS_SQL = `
SELECT at, from_status, to_status, actor, attempt, detail
  FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id LIMIT $3`;

const USER_EMAIL_SQL = `SELECT email FROM "user" WHERE id = $1`;

const WEBHOOKS_SQL = `
SELECT event_id, type, charge_id, amount_minor, currency, outcome, deliveries, first_seen_at, last_seen_at
  FROM bank_webhook_events WHERE merchant_ref = $1 ORDER BY first_seen_at, event_id LIMIT $2`;

/**
 * Everything known about one top-up, for the admin timeline page: the row, its audit transitions, the webhook
 * deliveries recorded for its merchant reference, and the bank's current view of its charge.
 *
 * `userId` and `refId` come from the URL; a user id outside USER_ID_PATTERN (lib/bank/merchant-ref.ts: printable
 * ASCII, so never the `\u0000` PostgreSQL refuses in text, case C31), an invalid ref id or an unknown key gives null
 * (the page answers "not found"), before any query. Throws database errors; the bank's failures are part of the
 * result (`unreachable`), never thrown.
 */
export async function getTopupTimeline(userId: string, refId: string): Promise<TopupTimeline | null> {
  if (!USER_ID_PATTERN.test(userId) || !isValidRefId(refId)) return null;
  const entry = await findEntryByKey({ userId, type: "topup", refId });
  if (!entry) return null;
  let merchantRef: string | null;
  try {
    merchantRef = merchantRefFor(userId, refId);
  } catch {
    merchantRef = null;
  }
  const [transitions, webhooks, bank, adjustment, owner] = await Promise.all([
    pool().query(TRANSITIONS_SQL, [userId, entry.id, TIMELINE_LINES_MAX]),
    merchantRef
      ? pool().query(WEBHOOKS_SQL, [merchantRef, TIMELINE_LINES_MAX])
      : Promise.resolve({ rows: [] as Record<string, unknown>[] }),
    bankView(merchantRef),
    findAdjustmentOf(entry),
    pool().query<{ email: string }>(USER_EMAIL_SQL, [userId]),
  ]);
  return {
    topup: {
      ...topupView(entry),
      userId: entry.userId,
      userEmail: owner.rows[0]?.email ?? null,
      chargeId: entry.bankChargeId,
      leaseOwner: entry.leaseOwner,
      leaseExpiresAt: entry.leaseExpiresAt?.toISOString() ?? null,
      fencingToken: entry.fencingToken,
      refundableMinor:
        entry.disputeStatus === "open" || entry.disputeStatus === "lost"
          ? 0
          : Math.max(0, entry.amountMinor - entry.refundedMinor),
    },
    merchantRef,
    response: entry.response,
    transitions: transitions.rows.map((row) => ({
      at: (row.at as Date).toISOString(),
      from: (row.from_status as string | null) ?? null,
      to: row.to_status as string,
      actor: row.actor as string,
      fencingToken: row.attempt as number,
      detail: (row.detail as string | null) ?? null,
    })),
    webhooks: webhooks.rows.map((row) => ({
      eventId: row.event_id as string,
      type: row.type as string,
      chargeId: (row.charge_id as string | null) ?? null,
      amount: (row.amount_minor as number | null) ?? null,
      currency: (row.currency as string | null) ?? null,
      outcome: row.outcome as string,
      deliveries: row.deliveries as number,
      firstSeenAt: (row.first_seen_at as Date).toISOString(),
      lastSeenAt: (row.last_seen_at as Date).toISOString(),
    })),
    bank,
    adjustment: adjustment ? timelineAdjustment(adjustment) : null,
  };
}

function timelineAdjustment(entry: LedgerEntry): TimelineAdjustment {
  const chargeId = entry.params.chargeId;
  return {
    entryId: entry.id,
    amount: entry.amountMinor,
    currency: entry.currency,
    chargeId: typeof chargeId === "string" ? chargeId : null,
    status: entry.status,
    createdAt: entry.createdAt.toISOString(),
  };
}

async function bankView(merchantRef: string | null): Promise<TimelineBankView> {
  if (merchantRef === null) return { kind: "no_charge" };
  const looked = await getCharge(merchantRef, { bankUrl: env().BANK_URL, timeoutMs: TIMELINE_BANK_TIMEOUT_MS });
  switch (looked.kind) {
    case "found":
      return { kind: "charge", charge: looked.charge };
    case "not_found":
      return { kind: "no_charge" };
    case "unknown":
      return { kind: "unreachable", reason: looked.detail ? `${looked.reason}: ${looked.detail}` : looked.reason };
    case "rejected":
      return { kind: "unreachable", reason: `${looked.status} ${looked.code}` };
  }
}
