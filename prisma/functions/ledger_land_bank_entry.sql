-- ledger_land_bank_entry: one entry the bank's word asks for, claimed and its money moved in one statement (contract
-- sections 12 and 14; docs/decisions/036, 037 and 060): a `chargeback` (a dispute was lost: the wallet is debited,
-- into debt where the balance is short, ledger_debit_into_debt), a `chargeback_reversal` (it was reversed) or a
-- `payout_return` (the bank gave a paid payout back): the wallet is credited, a debt repaid first
-- (ledger_credit_wallet). Keyed by the dispute id, or by the returned payout's ref id (a payout is returned at most
-- once, whatever return id the bank gives it). The entry is born `succeeded` (the bank has already moved the money;
-- nothing is left to wait for). Returns the row, or no row when the key already has one (the caller reads it and
-- compares its parameters).
--
-- Called by lib/ledger/dispute-entries.ts (`landBankEntry`): for lib/chargebacks/apply-dispute.ts in the webhook's or
-- the reconciler's transaction, after the dispute was noted on the credited entry (ledger_note_dispute), the same
-- lock order as a refund's statements, the top-up's row before the wallet; for lib/payouts, after the payout's row
-- was read succeeded under its lock.
CREATE OR REPLACE FUNCTION ledger_land_bank_entry(
  p_user_id text,
  p_type text,
  p_ref_id text,
  p_amount_minor bigint,
  p_currency text,
  p_fingerprint text,
  p_params jsonb,
  p_actor text,
  p_detail text
) RETURNS SETOF ledger_entries
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_entry ledger_entries;
BEGIN
  IF p_type NOT IN ('chargeback', 'chargeback_reversal', 'payout_return') THEN
    RAISE EXCEPTION 'ledger_land_bank_entry: % is not an entry the bank''s word lands', p_type;
  END IF;
  SELECT * INTO v_entry FROM ledger_claim(
    p_user_id => p_user_id, p_type => p_type, p_ref_id => p_ref_id, p_amount_minor => p_amount_minor,
    p_currency => p_currency, p_fingerprint => p_fingerprint, p_params => p_params, p_actor => p_actor,
    p_status => 'succeeded', p_detail => p_detail);
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF p_type = 'chargeback' THEN
    PERFORM ledger_debit_into_debt(p_entry => v_entry);
  ELSE
    PERFORM ledger_credit_wallet(p_entry => v_entry);
  END IF;
  RETURN NEXT v_entry;
END
$$;
