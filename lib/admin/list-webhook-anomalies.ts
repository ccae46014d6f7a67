import { pool } from "../db";

/** A webhook event the app could not apply (contract section 5: "recorded and shown to admins"). */
export interface WebhookAnomalyView {
  eventId: string;
  type: string;
  merchantRef: string | null;
  chargeId: string | null;
  amount: number | null;
  currency: string | null;
  outcome: string;
  /** Why the event was unusable, or what its applying delivery found (null for older records). */
  detail: string | null;
  deliveries: number;
  firstSeenAt: string;
  lastSeenAt: string;
}

/** Most anomalies listed: the admin page shows the latest 50; older ones are in the table and the logs. */
const WEBHOOK_ANOMALIES_LIMIT_MAX = 50;

// `$2`: payouts only. Payout events are recorded with the payout's merchant reference (`payout:<userId>:<refId>`) and
// the payout id as charge_id; an event whose merchant reference is unknown keeps the one it named.
const ANOMALIES_SQL = `
SELECT event_id, type, merchant_ref, charge_id, amount_minor, currency, outcome, detail, deliveries, first_seen_at,
       last_seen_at
  FROM bank_webhook_events
 WHERE (outcome LIKE 'anomaly\\_%' OR outcome = 'unusable_event')
   AND (NOT $2::boolean OR type LIKE 'payout.%' OR merchant_ref LIKE 'payout:%')
 ORDER BY last_seen_at DESC, event_id
 LIMIT $1`;

/**
 * The latest webhook events that moved nothing because they could not be applied (`anomaly_*` outcomes and unusable
 * events), newest delivery first, at most `limit` (1..50); with `payoutsOnly`, only payout events (the payouts page:
 * `anomaly_payout_mismatch`, the bank did not confirm the event or its payout disagrees with the row;
 * `anomaly_unknown_merchant_ref`, no payout has the merchant reference). Throws database errors.
 */
export async function listWebhookAnomalies(
  limit: number = WEBHOOK_ANOMALIES_LIMIT_MAX,
  options: { readonly payoutsOnly?: boolean } = {},
): Promise<WebhookAnomalyView[]> {
  const bounded = Math.min(Math.max(Math.trunc(limit), 1), WEBHOOK_ANOMALIES_LIMIT_MAX);
  const result = await pool().query(ANOMALIES_SQL, [bounded, options.payoutsOnly === true]);
  return result.rows.map((row) => ({
    eventId: row.event_id as string,
    type: row.type as string,
    merchantRef: (row.merchant_ref as string | null) ?? null,
    chargeId: (row.charge_id as string | null) ?? null,
    amount: (row.amount_minor as number | null) ?? null,
    currency: (row.currency as string | null) ?? null,
    outcome: row.outcome as string,
    detail: (row.detail as string | null) ?? null,
    deliveries: row.deliveries as number,
    firstSeenAt: (row.first_seen_at as Date).toISOString(),
    lastSeenAt: (row.last_seen_at as Date).toISOString(),
  }));
}
