-- Chargebacks and debt (contract section 12): a dispute the bank closed lost debits the wallet once, through a
-- `chargeback` entry keyed by the dispute id; a dispute reversed in the user's favour credits it back once, through
-- a `chargeback_reversal` entry under the same id. Runs after the refunds migration (20261202100000), so the type
-- list names every type, `refund` included. Valid on PostgreSQL 15 and 18.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_type_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_type_check
  CHECK (type IN ('topup', 'reward', 'payment', 'adjustment', 'refund', 'chargeback', 'chargeback_reversal'));

-- What a chargeback took that the balance could not cover: never a negative balance. Every credit repays it first,
-- and payments are refused while it is open. 9007199254740992 = 2^53, as for the balance.
ALTER TABLE wallets ADD COLUMN debt_minor bigint NOT NULL DEFAULT 0;
ALTER TABLE wallets ADD CONSTRAINT wallets_debt_range CHECK (debt_minor >= 0 AND debt_minor < 9007199254740992);
