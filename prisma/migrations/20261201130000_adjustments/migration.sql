-- Adjustments (contract section 5): a bank charge that succeeded for a top-up whose row had already failed is
-- credited by an `adjustment` entry, claimed like any other entry (so it lands once) and linked to the failed
-- top-up it settles. The top-up's own status and stored response never change. Valid on PostgreSQL 15 and 18.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_type_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_type_check
  CHECK (type IN ('topup', 'reward', 'payment', 'adjustment'));

-- The top-up an adjustment settles (same user: the key of the link leads with user_id like every other index).
ALTER TABLE ledger_entries ADD COLUMN adjusts_entry_id bigint;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_adjusts_entry_fkey
  FOREIGN KEY (user_id, adjusts_entry_id) REFERENCES ledger_entries (user_id, id) ON DELETE RESTRICT;
-- Every adjustment names its top-up, and nothing else names one.
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_adjustment_link
  CHECK ((type = 'adjustment') = (adjusts_entry_id IS NOT NULL));
-- At most one adjustment per top-up, whatever its key. Partial: a full index led by user_id is a plan a generic
-- plan made on an empty ledger may pick for any lookup by user (case C25: it read a whole user's rows to lock one).
CREATE UNIQUE INDEX ledger_entries_user_id_adjusts_entry_id_key ON ledger_entries (user_id, adjusts_entry_id)
  WHERE adjusts_entry_id IS NOT NULL;
