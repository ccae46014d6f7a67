-- No charge without room for its credit (contract section 5, case C15): before a top-up is sent to the bank, its
-- credit plus the user's other unfinished top-ups must fit under MAX_BALANCE_MINOR. This index makes that sum one
-- short index range per user: unfinished top-ups stay few (they finish within seconds), so it stays small at any
-- ledger size. Valid on PostgreSQL 15 (apt) and 18 (embedded).
CREATE INDEX ledger_entries_unfinished_topups_idx ON ledger_entries (user_id)
  WHERE type = 'topup' AND status IN ('initiated', 'processing');
