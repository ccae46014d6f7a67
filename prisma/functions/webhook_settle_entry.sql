-- webhook_settle_entry: a signed `charge.succeeded` or `payout.paid` applied in one statement (contract sections 5 and
-- 14; case C19; docs/decisions/045 and 063): the unfinished top-up or payout it names is settled
-- (ledger_settle_matching_entry) and the event is recorded as `credited` (a top-up) or `payout_paid` (a payout)
-- (webhook_record_event), in one commit, or nothing is written at all. Returns the settled row, the status it left
-- and the wallet's new balance (NULL for a payout); no row when the entry does not match the bank's success or is not
-- unfinished, and then the webhook judges the event the long way (lib/topups/settle-topup.ts,
-- lib/payouts/settle-payout.ts), which records it.
--
-- Called by lib/ledger/webhook-credit.ts (`settleFromWebhook`). The money rule is the ledger's function; this file
-- only puts the event's record in the same commit.
CREATE OR REPLACE FUNCTION webhook_settle_entry(
  p_entry_type text,
  p_user_id text,
  p_ref_id text,
  p_event_id text,
  p_type text,
  p_merchant_ref text,
  p_bank_id text,
  p_amount_minor bigint,
  p_currency text,
  p_payload text
) RETURNS TABLE (entry ledger_entries, from_status text, balance_minor bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_moved record;
BEGIN
  SELECT * INTO v_moved FROM ledger_settle_matching_entry(
    p_user_id => p_user_id, p_entry_type => p_entry_type, p_ref_id => p_ref_id, p_bank_id => p_bank_id,
    p_amount_minor => p_amount_minor, p_currency => p_currency, p_actor => 'webhook',
    p_detail => format('webhook: %s %s', p_type, p_event_id));
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM webhook_record_event(
    p_event_id => p_event_id, p_type => p_type, p_merchant_ref => p_merchant_ref, p_charge_id => p_bank_id,
    p_amount_minor => p_amount_minor, p_currency => p_currency,
    p_outcome => CASE p_entry_type WHEN 'topup' THEN 'credited' ELSE 'payout_paid' END, p_payload => p_payload,
    p_detail => NULL, p_applied => true);
  RETURN QUERY SELECT v_moved.entry, v_moved.from_status, v_moved.balance_minor;
END
$$;
