-- ledger_settle_matching_entry: the common case of the bank's signed success in one statement (contract sections 5
-- and 14; docs/decisions/045 and 063): the unfinished entry `(p_user_id, p_entry_type, p_ref_id)` whose amount and
-- currency are the bank's, and which records no other bank id, moves to `succeeded` with the bank's id
-- (ledger_move_entry: status guard only, the bank's word). A top-up's success credits the wallet; a payout's posts
-- its hold to the bank's clearing (the move's `settle` rule). The same moves lib/topups/settle-topup.ts and
-- lib/payouts/settle-payout.ts make once they have read the row and matched the bank's answer against it, without the
-- read and the transaction around them.
--
-- Returns the moved row, the status it left and the wallet's new balance (NULL for a payout: nothing is credited); no
-- row when nothing was written (no such row, a terminal row, or a success that disagrees with it): the caller then
-- judges the row the long way. Any other entry type is refused (22023): no other type is settled by a bank success.
--
-- Called by webhook_settle_entry, the webhook's statement that records the event with the move
-- (lib/ledger/webhook-credit.ts, case C19). The key is looked up through the claim's unique index; its type is a
-- variable, as in the claim's own lookup, so no plan can read it through an index that leads with a constant type
-- (case C25; docs/decisions/045).
CREATE OR REPLACE FUNCTION ledger_settle_matching_entry(
  p_user_id text,
  p_entry_type text,
  p_ref_id text,
  p_bank_id text,
  p_amount_minor bigint,
  p_currency text,
  p_actor text,
  p_detail text
) RETURNS TABLE (entry ledger_entries, from_status text, balance_minor bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_credit boolean := CASE p_entry_type WHEN 'topup' THEN true WHEN 'payout' THEN false END;
  v_entry ledger_entries;
BEGIN
  IF v_credit IS NULL THEN
    RAISE EXCEPTION 'ledger_settle_matching_entry: a % is not settled by a bank success', p_entry_type
      USING ERRCODE = '22023';
  END IF;
  SELECT e.* INTO v_entry FROM ledger_entries e
   WHERE e.user_id = p_user_id AND e.type = p_entry_type AND e.ref_id = p_ref_id
   FOR UPDATE;
  IF NOT FOUND OR v_entry.amount_minor <> p_amount_minor OR v_entry.currency <> p_currency
     OR (v_entry.bank_charge_id IS NOT NULL AND v_entry.bank_charge_id <> p_bank_id) THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM ledger_move_entry(
    p_user_id => p_user_id, p_entry_id => v_entry.id, p_to_status => 'succeeded', p_actor => p_actor,
    p_bank_charge_id => p_bank_id, p_credit => v_credit, p_detail => p_detail);
END
$$;
