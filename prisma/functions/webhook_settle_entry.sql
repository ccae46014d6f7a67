-- webhook_credit_topup: a signed `charge.succeeded` applied in one statement (contract section 5; case C19;
-- docs/decisions/045): the unfinished top-up it names is credited (ledger_credit_matching_topup) and the event is
-- recorded as `credited` (webhook_record_event), in one commit, or nothing is written at all. Returns the credited
-- row, the status it left and the wallet's new balance; no row when the top-up does not match the charge or is not
-- unfinished, and then the webhook judges the event the long way (lib/topups/settle-topup.ts), which records it.
--
-- Called by lib/webhooks/credit-matching-topup.ts (`creditMatchingTopup`). The money rule is the ledger's function;
-- this file only puts the event's record in the same commit.
CREATE OR REPLACE FUNCTION webhook_credit_topup(
  p_user_id text,
  p_ref_id text,
  p_event_id text,
  p_type text,
  p_merchant_ref text,
  p_charge_id text,
  p_amount_minor bigint,
  p_currency text,
  p_payload text
) RETURNS TABLE (entry ledger_entries, from_status text, balance_minor bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_moved record;
BEGIN
  SELECT * INTO v_moved FROM ledger_credit_matching_topup(
    p_user_id => p_user_id, p_ref_id => p_ref_id, p_charge_id => p_charge_id, p_amount_minor => p_amount_minor,
    p_currency => p_currency, p_actor => 'webhook', p_detail => format('webhook: %s %s', p_type, p_event_id));
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM webhook_record_event(
    p_event_id => p_event_id, p_type => p_type, p_merchant_ref => p_merchant_ref, p_charge_id => p_charge_id,
    p_amount_minor => p_amount_minor, p_currency => p_currency, p_outcome => 'credited', p_payload => p_payload,
    p_detail => NULL, p_applied => true);
  RETURN QUERY SELECT v_moved.entry, v_moved.from_status, v_moved.balance_minor;
END
$$;
