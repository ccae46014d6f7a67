import { pool } from "../db";
import type { WebhookAnomalyView } from "./list-webhook-anomalies";

/** Most payout anomalies listed: the latest 50; older ones are in the table and the logs. */
const PAYOUT_ANOMALIES_LIMIT_MAX = 50;

// Payout events are recorded with the payout's merchant reference (`payout:<userId>:<refId>`) and the payout id as
// charge_id; an event whose merchant reference is unknown keeps the one it named.
const PAYOUT_ANOMALIES_SQL = `
SELECT event_id, type, merchant_ref, charge_id, amount_minor, currency, outcome, detail, deliveries, first_seen_at,
       last_seen_at
  FROM bank_webhook_events
 WHERE (type LIKE 'payout.%' OR merchant_ref LIKE 'payout:%')
   AND (outcome LIKE 'anomaly\\_%' OR outcome = 'unusable_event')
 ORDER BY last_seen_at DESC, event_id
 LIMIT $1`;

/**
 * The latest payout webhook events that moved nothing because they could not be applied (`anomaly_payout_mismatch`:
 * the bank did not confirm the event, or its payout disagrees with the row; `anomaly_unknown_merchant_ref`: no payout
 * has the key), newest delivery first, at most `limit` (1..50). Throws database errors.
 */
export async function listPayoutWebhookAnomalies(
  limit: number = PAYOUT_ANOMALIES_LIMIT_MAX,
): Promise<WebhookAnomalyView[]> {
  const bounded = Math.min(Math.max(Math.trunc(limit), 1), PAYOUT_ANOMALIES_LIMIT_MAX);
  const result = await pool().query(PAYOUT_ANOMALIES_SQL, [bounded]);
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
