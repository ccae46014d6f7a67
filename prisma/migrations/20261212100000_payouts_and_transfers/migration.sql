-- Money out and between people (contract sections 14 and 15; docs/decisions/060 and 061): withdrawals to a bank
-- account (`payout`, its money held from the claim until the bank's word; a `payout_return` when the bank gives a
-- paid payout back) and transfers between users (`transfer` on the sender's side, `transfer_in` on the recipient's,
-- both written by one statement). Tables, indexes and data only: the rules are in prisma/functions/.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_type_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_type_check
  CHECK (type IN ('topup', 'reward', 'payment', 'adjustment', 'refund', 'chargeback', 'chargeback_reversal',
                  'payout', 'payout_return', 'transfer', 'transfer_in'));

-- The counter-parties of the new movements. `payouts_in_flight` holds what a withdrawal took from a wallet until the
-- bank pays it (then it leaves for the bank's clearing) or fails it (then it goes back): the user's held amount is
-- their unfinished payouts. `transfers_in_transit` is crossed by each transfer inside its one statement and nets to
-- zero at every commit.
INSERT INTO ledger_accounts (name, kind, normal_side, description) VALUES
  ('payouts_in_flight', 'house', 'credit', 'withdrawals held from wallets and not yet paid or failed by the bank'),
  ('transfers_in_transit', 'house', 'credit', 'transfers between users, crossed inside one statement: always 0');

INSERT INTO ledger_journal_rules (type, event, from_account, to_account) VALUES
  ('payout', 'reserve', 'wallet', 'payouts_in_flight'),
  ('payout', 'settle', 'payouts_in_flight', 'bank_clearing'),
  ('payout', 'release', 'payouts_in_flight', 'wallet'),
  ('payout_return', 'move', 'bank_clearing', 'wallet'),
  ('transfer', 'move', 'wallet', 'transfers_in_transit'),
  ('transfer_in', 'move', 'transfers_in_transit', 'wallet');

-- Money that may still come back to a wallet (prisma/functions/ledger_pending_credits_minor.sql): unfinished top-ups,
-- refunds and now payouts (a failed one is given back). The user's held amount is read through it too.
CREATE INDEX ledger_entries_unfinished_give_backs_idx ON ledger_entries (user_id)
  WHERE type IN ('topup', 'refund', 'payout') AND status IN ('initiated', 'processing');
DROP INDEX ledger_entries_unfinished_credits_idx;

-- The daily withdrawal limit's PostgreSQL half (contract section 14): what a user's payouts claimed on a UTC day hold
-- against the limit, raised by the claim under the wallet's lock and lowered when the bank fails the payout.
CREATE TABLE payout_limit_days (
  user_id        text NOT NULL REFERENCES "user" ("id") ON DELETE RESTRICT,
  -- The UTC day, `YYYY-MM-DD` (as reward_cap_days writes its day).
  day            text NOT NULL CHECK (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
  reserved_minor bigint NOT NULL CHECK (reserved_minor >= 0 AND reserved_minor < 9007199254740992),
  PRIMARY KEY (user_id, day)
);

-- The ledger functions these replace under new names (their files are renamed in this release): a refund's release is
-- now any reservation's (refunds and payouts), a dispute's landed entry any entry the bank's word lands.
DROP FUNCTION IF EXISTS ledger_release_refund(text, bigint, text, text, text);
DROP FUNCTION IF EXISTS ledger_land_dispute_entry(text, text, text, bigint, text, text, jsonb, text, text);

-- Live status (prisma/functions/ledger_change_notify.sql): a watched user's payout, its return and a transfer received
-- are announced like a top-up, so the wallet page follows them without reloading.
DROP TRIGGER ledger_entries_change_notify_insert ON ledger_entries;
DROP TRIGGER ledger_entries_change_notify_status ON ledger_entries;
CREATE TRIGGER ledger_entries_change_notify_insert
  AFTER INSERT ON ledger_entries
  FOR EACH ROW WHEN (NEW.type IN ('topup', 'adjustment', 'payout', 'payout_return', 'transfer_in'))
  EXECUTE FUNCTION ledger_change_notify();
CREATE TRIGGER ledger_entries_change_notify_status
  AFTER UPDATE OF status ON ledger_entries
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.type IN ('topup', 'adjustment', 'payout'))
  EXECUTE FUNCTION ledger_change_notify();
