-- The admin page's charts read the last 24 hours of top-ups (lib/admin/get-topup-hourly-stats.ts): by creation time,
-- and by the time of their final transition. Without these, both scan every row ever written.
CREATE INDEX ledger_entries_type_created_at_idx ON ledger_entries (type, created_at);
CREATE INDEX ledger_transitions_final_at_idx ON ledger_transitions (at)
  WHERE to_status IN ('succeeded', 'failed');
