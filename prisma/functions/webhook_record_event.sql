-- webhook_record_event: one delivery of a bank event, recorded in bank_webhook_events with what the app did with it
-- (contract section 5; case C19). The first delivery of an event inserts its row; later ones count themselves. The
-- outcome (and its detail) is replaced only by a delivery that applied the event (`p_applied`), so a duplicate recorded
-- first never hides the credit, and each event is recorded `credited` exactly once and `duplicate` otherwise.
--
-- Called by lib/webhooks/record-webhook-event.ts (`recordWebhookEvent`, for every outcome but the one-statement
-- settlement) and by webhook_settle_entry (that settlement, in the same statement). The insert goes through the event
-- id's unique index.
CREATE OR REPLACE FUNCTION webhook_record_event(
  p_event_id text,
  p_type text,
  p_merchant_ref text,
  p_charge_id text,
  p_amount_minor bigint,
  p_currency text,
  p_outcome text,
  p_payload text,
  p_detail text,
  p_applied boolean
) RETURNS void
LANGUAGE sql VOLATILE AS $$
  INSERT INTO bank_webhook_events AS r
    (event_id, type, merchant_ref, charge_id, amount_minor, currency, outcome, payload, detail)
  VALUES (p_event_id, p_type, p_merchant_ref, p_charge_id, p_amount_minor, p_currency, p_outcome, p_payload, p_detail)
  ON CONFLICT (event_id) DO UPDATE
     SET deliveries = r.deliveries + 1,
         last_seen_at = now(),
         outcome = CASE WHEN p_applied THEN EXCLUDED.outcome ELSE r.outcome END,
         detail = CASE WHEN p_applied THEN EXCLUDED.detail ELSE r.detail END
$$;
