-- Settlement that keeps failing is counted on its row, with its last error, and flagged for attention
-- after SETTLE_ATTEMPTS_MAX attempts (contract section 5). A constant default: existing rows get 0 without a
-- rewrite (PostgreSQL 11+).
ALTER TABLE ledger_entries
  ADD COLUMN settle_failures integer NOT NULL DEFAULT 0
    CONSTRAINT ledger_entries_settle_failures_range CHECK (settle_failures >= 0),
  ADD COLUMN settle_last_error text,
  ADD COLUMN settle_flagged_at timestamptz(3);
-- The admin page's "needs attention" list: flagged rows only, which stay few.
CREATE INDEX ledger_entries_settle_flagged_idx ON ledger_entries (settle_flagged_at DESC)
  WHERE settle_flagged_at IS NOT NULL;
