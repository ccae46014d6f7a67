-- Refunds (contract section 11): money given back on a succeeded top-up through a `refund` entry, claimed like any
-- other entry and linked to the top-up it refunds. The claim reserves the money: the wallet's balance and the
-- top-up's refundable remainder (amount_minor - refunded_minor) are lowered in the claim's own statement, and given
-- back only when the bank confirms the refund failed. Valid on PostgreSQL 15 and 18.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_type_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_type_check
  CHECK (type IN ('topup', 'reward', 'payment', 'adjustment', 'refund'));

-- The top-up a refund gives money back on (same user: the link's key leads with user_id like every other index).
ALTER TABLE ledger_entries ADD COLUMN refunds_entry_id bigint;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_refunds_entry_fkey
  FOREIGN KEY (user_id, refunds_entry_id) REFERENCES ledger_entries (user_id, id) ON DELETE RESTRICT;
-- Every refund names its top-up, and nothing else names one.
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_refund_link
  CHECK ((type = 'refund') = (refunds_entry_id IS NOT NULL));
-- A top-up's refunds, reserved or final: never below zero, never above the top-up, and only top-ups have any. The
-- claim refuses before this could fire; the CHECK is the last line of defence.
ALTER TABLE ledger_entries ADD COLUMN refunded_minor bigint NOT NULL DEFAULT 0;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_refunded_range
  CHECK (refunded_minor >= 0 AND refunded_minor <= amount_minor AND (refunded_minor = 0 OR type = 'topup'));
-- A top-up's refunds, for its page and the audit. Partial, like the adjustments' link (case C25).
CREATE INDEX ledger_entries_user_id_refunds_entry_id_idx ON ledger_entries (user_id, refunds_entry_id)
  WHERE refunds_entry_id IS NOT NULL;
