-- Receipts for money out and between people (contract sections 14 and 15; docs/decisions/054): a payout the bank paid,
-- a transfer sent, the transfer received and both sides of an admin's reversal of a transfer queue their receipts in
-- the commit that makes them succeed, as top-ups, payments and refunds do. Transfers and reversals are inserted
-- succeeded (the INSERT trigger); a payout succeeds by its move (the UPDATE trigger). The trigger function is prisma/functions/mail_queue_receipt.sql.
DROP TRIGGER ledger_entries_receipt_insert ON ledger_entries;
DROP TRIGGER ledger_entries_receipt_status ON ledger_entries;

CREATE TRIGGER ledger_entries_receipt_insert
  AFTER INSERT ON ledger_entries
  FOR EACH ROW WHEN (
    NEW.status = 'succeeded'
    AND NEW.type IN ('topup', 'payment', 'refund', 'payout', 'transfer', 'transfer_in', 'transfer_reversal',
                     'transfer_reversal_out')
  )
  EXECUTE FUNCTION mail_queue_receipt();

CREATE TRIGGER ledger_entries_receipt_status
  AFTER UPDATE OF status ON ledger_entries
  FOR EACH ROW WHEN (
    OLD.status IS DISTINCT FROM NEW.status AND NEW.status = 'succeeded'
    AND NEW.type IN ('topup', 'payment', 'refund', 'payout', 'transfer', 'transfer_in', 'transfer_reversal',
                     'transfer_reversal_out')
  )
  EXECUTE FUNCTION mail_queue_receipt();
