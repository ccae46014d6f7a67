-- ledger_credit_matching_topup: the common case of a charge's success in one statement (contract section 5;
-- docs/decisions/045): the unfinished top-up `(p_user_id, 'topup', p_ref_id)` whose amount and currency are the
-- charge's, and which records no other charge id, moves to `succeeded` with the charge id and its credit
-- (ledger_move_entry: status guard only, the bank's word). The same move lib/topups/settle-topup.ts makes once it has
-- read the row and matched the charge against it, without the read and the transaction around it.
--
-- Returns the moved row, the status it left and the wallet's new balance; no row when nothing was written (no such
-- row, a terminal row, or a charge that disagrees with it): the caller then judges the row the long way.
--
-- Called by webhook_credit_topup, the webhook's statement that records the event with the credit
-- (lib/webhooks/credit-matching-topup.ts, case C19). The key is looked up through the claim's unique index; its type
-- is a variable, as in the claim's own lookup, so no plan can read it through an index that leads with a constant
-- type (case C25; docs/decisions/045).
CREATE OR REPLACE FUNCTION ledger_credit_matching_topup(
  p_user_id text,
  p_ref_id text,
  p_charge_id text,
  p_amount_minor bigint,
  p_currency text,
  p_actor text,
  p_detail text
) RETURNS TABLE (entry ledger_entries, from_status text, balance_minor bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_type text := 'topup';
  v_entry ledger_entries;
BEGIN
  SELECT e.* INTO v_entry FROM ledger_entries e
   WHERE e.user_id = p_user_id AND e.type = v_type AND e.ref_id = p_ref_id
   FOR UPDATE;
  IF NOT FOUND OR v_entry.amount_minor <> p_amount_minor OR v_entry.currency <> p_currency
     OR (v_entry.bank_charge_id IS NOT NULL AND v_entry.bank_charge_id <> p_charge_id) THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM ledger_move_entry(
    p_user_id => p_user_id, p_entry_id => v_entry.id, p_to_status => 'succeeded', p_actor => p_actor,
    p_bank_charge_id => p_charge_id, p_credit => true, p_detail => p_detail);
END
$$;
