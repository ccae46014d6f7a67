import { APPLIED_DISPUTE_OUTCOMES, type DisputeOutcome } from "../chargebacks/handle-dispute-event";
import { pool } from "../db";
import { prepared, type Queryable } from "../ledger";
import { APPLIED_REFUND_OUTCOMES, type RefundWebhookOutcome } from "../refunds/handle-refund-event";
import { APPLIED_PAYOUT_OUTCOMES, type PayoutWebhookOutcome } from "../payouts/handle-payout-event";
import type { SettlementAnomalyKind } from "../topups/settle-topup";

/** What a charge event did (lib/webhooks/handle-charge-event.ts). `anomaly_*` credits nothing. */
export type ChargeOutcome =
  /** This delivery credited the row (a success, or a failure the bank contradicted: case C14). */
  | "credited"
  /** This delivery failed the row, on the bank's confirmation. */
  | "failed"
  /** The row had already failed: this delivery credited the charge through the row's adjustment entry. */
  | "adjusted"
  /** The row already is what the event says. */
  | "duplicate"
  /** A failure event for a row that succeeded, or whose charge the bank still has pending: changes nothing. */
  | "ignored_stale"
  | "anomaly_unknown_merchant_ref"
  | `anomaly_${SettlementAnomalyKind}`;

/** What the app did with an event; recorded per event id and shown to admins. `anomaly_*` moves no money. */
export type WebhookOutcome =
  | ChargeOutcome
  /** A signed body that is no event the wallet can read (lib/webhooks/record-unusable-event.ts, case C18). */
  | "unusable_event"
  /** Refund events (contract section 11; lib/refunds/handle-refund-event.ts). */
  | RefundWebhookOutcome
  /** Dispute events (lib/chargebacks/handle-dispute-event.ts, contract section 12). */
  | DisputeOutcome
  /** Payout events (lib/payouts/handle-payout-event.ts, contract section 14). */
  | PayoutWebhookOutcome;

/** Outcomes that mean "this delivery applied the event": the recorded outcome of its event, whoever came first. */
const APPLIED_OUTCOMES: readonly WebhookOutcome[] = [
  "credited",
  "failed",
  "adjusted",
  ...APPLIED_DISPUTE_OUTCOMES,
  ...APPLIED_REFUND_OUTCOMES,
  ...APPLIED_PAYOUT_OUTCOMES,
];

/**
 * The fields of an event its record keeps. Every kind of event has them; an unusable body has what could be read of
 * them (null otherwise) under `type` "unusable".
 */
export interface RecordedEvent {
  readonly id: string;
  readonly type: string;
  readonly data: {
    readonly merchantRef: string | null;
    readonly chargeId: string | null;
    /** Minor units. */
    readonly amount: number | null;
    readonly currency: string | null;
  };
}

// One call of webhook_record_event (prisma/functions/webhook_record_event.sql), arguments by name.
const RECORD_EVENT_SQL = `SELECT webhook_record_event(
  p_event_id => $1, p_type => $2, p_merchant_ref => $3, p_charge_id => $4, p_amount_minor => $5::bigint,
  p_currency => $6, p_outcome => $7, p_payload => $8, p_detail => $9, p_applied => $10::boolean)`;

/**
 * Records one delivery of `event` in bank_webhook_events with what the app did with it (contract section 5, case C19):
 * the event's first delivery inserts its row, a duplicate delivery counts itself on it, and the outcome (with
 * `detail`) is replaced only when `outcome` applied the event, so the delivery that credited stays recorded as
 * `credited` whichever copy arrived first. `db` is the transaction that moved the row, so the record commits with the
 * move, or null for the pool when nothing moved; `payload` is the body as received (storable text). The refund and
 * dispute handlers get this function as their recorder. Throws database errors.
 */
export async function recordWebhookEvent(
  db: Queryable | null,
  event: RecordedEvent,
  payload: string,
  outcome: WebhookOutcome,
  detail: string | null,
): Promise<void> {
  const { data } = event;
  // Named: every delivery sends it, so each connection plans it once (lib/ledger queryable.ts `prepared`).
  await (db ?? pool()).query(
    prepared("webhook_record_event", RECORD_EVENT_SQL, [
      event.id,
      event.type,
      data.merchantRef,
      data.chargeId,
      data.amount,
      data.currency,
      outcome,
      payload,
      detail,
      APPLIED_OUTCOMES.includes(outcome),
    ]),
  );
}
