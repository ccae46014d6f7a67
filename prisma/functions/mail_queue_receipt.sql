-- Queues the receipt of a top-up, payment, refund, payout, transfer (sent or received) or either side of a transfer's
-- reversal that has just succeeded (docs/decisions/054-mail-outbox.md): the trigger function of
-- ledger_entries_receipt_insert and ledger_entries_receipt_status (prisma/migrations/20261210100000_mail_outbox, their
-- types widened by 20261214200000_receipts_for_money_out_and_reversals). It runs in the transaction that makes the entry succeed, so the
-- receipt's row commits with the money or not at all. The event key names the entry: an entry succeeds once
-- (a final row never moves), and ON CONFLICT keeps one row even if it were reported again.
CREATE OR REPLACE FUNCTION mail_queue_receipt() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO mail_outbox (event_key, kind, user_id, entry_id)
  VALUES ('receipt:' || NEW.user_id || ':' || NEW.id, 'receipt', NEW.user_id, NEW.id)
  ON CONFLICT (event_key) DO NOTHING;
  RETURN NULL;
END
$$;
