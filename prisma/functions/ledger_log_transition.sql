-- ledger_log_transition: the audit row of one transition of a ledger entry (contract section 2: every transition is
-- appended to the audit table, with who made it). ledger_transitions refuses UPDATE and DELETE
-- (ledger_transitions_append_only), so a row written here is the history for good.
--
-- Called by every function that moves an entry, in the same transaction as the move: ledger_claim (the claim and,
-- for an entry born decided, its decision), ledger_move_entry (every later move) and ledger_take_over_entry (the
-- reconciler's take-over, a same-status row). No lib/ file writes the table.
-- `p_from_status` NULL: the claim itself. `p_attempt`: the entry's fencing token when it moved.
CREATE OR REPLACE FUNCTION ledger_log_transition(
  p_user_id text,
  p_entry_id bigint,
  p_from_status text,
  p_to_status text,
  p_actor text,
  p_attempt int,
  p_detail text DEFAULT NULL
) RETURNS void
LANGUAGE sql VOLATILE AS $$
  INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
  VALUES (p_user_id, p_entry_id, p_from_status, p_to_status, p_actor, p_attempt, p_detail)
$$;
