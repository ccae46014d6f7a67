-- An admin's reversal of a succeeded transfer (contract section 15; docs/decisions/063): the sender's
-- `transfer_reversal` credit (keyed by the transfer's ref id, so a transfer is reversed at most once) and the
-- recipient's `transfer_reversal_out` debit (keyed `transfer_reversal:<the sender's reversal entry id>`), both written
-- by one statement (prisma/functions/ledger_reverse_transfer.sql) through `transfers_in_transit`, which stays zero at
-- every commit. Tables, constraints and data only: the rules are in prisma/functions/.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_type_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_type_check
  CHECK (type IN ('topup', 'reward', 'payment', 'adjustment', 'refund', 'chargeback', 'chargeback_reversal',
                  'payout', 'payout_return', 'transfer', 'transfer_in', 'transfer_reversal',
                  'transfer_reversal_out'));

-- The reversal crosses the same house account as the transfer, the other way: out of the recipient's wallet, into the
-- sender's.
INSERT INTO ledger_journal_rules (type, event, from_account, to_account) VALUES
  ('transfer_reversal_out', 'move', 'wallet', 'transfers_in_transit'),
  ('transfer_reversal', 'move', 'transfers_in_transit', 'wallet');

-- Live status (prisma/functions/ledger_change_notify.sql): both sides of a reversal are made by an admin's request,
-- not the watching user's, so they are announced like a transfer received, and both wallet pages follow them.
DROP TRIGGER ledger_entries_change_notify_insert ON ledger_entries;
CREATE TRIGGER ledger_entries_change_notify_insert
  AFTER INSERT ON ledger_entries
  FOR EACH ROW WHEN (NEW.type IN ('topup', 'adjustment', 'payout', 'payout_return', 'transfer_in',
                                  'transfer_reversal', 'transfer_reversal_out'))
  EXECUTE FUNCTION ledger_change_notify();
