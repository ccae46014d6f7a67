-- ledger_claim_refund: a refund claimed and its money reserved in one statement (contract section 11;
-- docs/decisions/034 and 048). The money leaves the wallet and the top-up's refundable remainder at the claim, before
-- the bank is called, so a payment racing the refund can never spend what is being refunded.
--
-- Called by lib/ledger/refunds.ts (`claimRefund`). Returns the verdict and, when this call claimed the key, the row:
-- `reserved` (the row `initiated` under the caller's lease; wallet and remainder lowered), a refusal stored as the
-- row's first response (`topup_disputed`, `refund_exceeds_topup`, `debt_outstanding`, `insufficient_funds`: the row
-- born `failed`, nothing reserved), or `topup_not_refundable` (no such succeeded top-up of this user: nothing claimed).
-- A verdict with no row means the key already had one (the caller takes the loser's path).
--
-- Statements, in order (the lock order of every statement about a top-up's money: the top-up's row, then the wallet):
-- 1. the top-up's row, locked: its remainder and the state of a dispute of its charge (noted by
--    lib/chargebacks/apply-dispute.ts under the same lock);
-- 2. the wallet's lock (ledger_lock_wallet), read as the lock left it;
-- 3. the verdict, in this order: a dispute open or lost (case C26: the dispute returns the cardholder's money, so a
--    refund would return it twice; the bank refuses it too), more than the remainder, then the wallet's word
--    (ledger_debit_verdict, as for a payment: a debt open, a refund waits until credits have repaid it; more than the
--    balance);
-- 4. the claim (ledger_claim);
-- 5. for a claim that reserved: the remainder raised on the top-up, and the debit (ledger_debit_wallet) under the
--    lock the verdict was taken under.
CREATE OR REPLACE FUNCTION ledger_claim_refund(
  p_user_id text,
  p_ref_id text,
  p_amount_minor bigint,
  p_currency text,
  p_fingerprint text,
  p_params jsonb,
  p_lease_owner text,
  p_lease_ms int,
  p_actor text,
  p_topup_entry_id bigint,
  p_insufficient_body text,
  p_exceeds_body text,
  p_debt_body text,
  p_disputed_body text,
  OUT verdict text,
  OUT entry ledger_entries,
  OUT balance_minor bigint
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_remaining_minor bigint;
  v_dispute_status text;
  v_wallet wallets;
  v_debit text;
BEGIN
  SELECT t.amount_minor - t.refunded_minor, t.dispute_status INTO v_remaining_minor, v_dispute_status
    FROM ledger_entries t
   WHERE t.user_id = p_user_id AND t.id = p_topup_entry_id AND t.type = 'topup' AND t.status = 'succeeded'
   FOR UPDATE;
  IF NOT FOUND THEN
    verdict := 'topup_not_refundable';
    RETURN;
  END IF;
  v_wallet := ledger_lock_wallet(p_user_id => p_user_id, p_currency => p_currency);
  v_debit := ledger_debit_verdict(p_wallet => v_wallet, p_amount_minor => p_amount_minor);
  verdict := CASE
    WHEN v_dispute_status IN ('open', 'lost') THEN 'topup_disputed'
    WHEN v_remaining_minor < p_amount_minor THEN 'refund_exceeds_topup'
    WHEN v_debit <> 'covered' THEN v_debit
    ELSE 'reserved' END;
  SELECT * INTO entry FROM ledger_claim(
    p_user_id => p_user_id, p_type => 'refund', p_ref_id => p_ref_id, p_amount_minor => p_amount_minor,
    p_currency => p_currency, p_fingerprint => p_fingerprint, p_params => p_params, p_actor => p_actor,
    p_status => CASE WHEN verdict = 'reserved' THEN 'initiated' ELSE 'failed' END,
    p_failure_reason => CASE WHEN verdict = 'reserved' THEN NULL ELSE verdict END,
    p_lease_owner => p_lease_owner, p_lease_ms => p_lease_ms,
    p_response_status => CASE verdict WHEN 'reserved' THEN NULL
                                      WHEN 'topup_disputed' THEN 422 WHEN 'refund_exceeds_topup' THEN 422
                                      ELSE 402 END::smallint,
    p_response_body => CASE verdict WHEN 'insufficient_funds' THEN p_insufficient_body
                                    WHEN 'refund_exceeds_topup' THEN p_exceeds_body
                                    WHEN 'debt_outstanding' THEN p_debt_body
                                    WHEN 'topup_disputed' THEN p_disputed_body END,
    p_claim_detail => CASE WHEN verdict = 'reserved' THEN 'claimed: refund reserved from the wallet and the top-up' END,
    p_detail => CASE WHEN verdict = 'reserved' THEN NULL ELSE 'claimed and refused: nothing reserved' END,
    p_refunds_entry_id => p_topup_entry_id);
  -- No row: the key already had one; nothing is reserved by this call.
  IF NOT FOUND OR verdict <> 'reserved' THEN
    RETURN;
  END IF;
  UPDATE ledger_entries t SET refunded_minor = t.refunded_minor + p_amount_minor
   WHERE t.user_id = p_user_id AND t.id = p_topup_entry_id;
  balance_minor := ledger_debit_wallet(p_entry => entry, p_event => 'reserve');
  IF balance_minor IS NULL THEN
    RAISE EXCEPTION 'refund % of user %: reserved under the wallet lock, then not debited', p_ref_id, p_user_id;
  END IF;
END
$$;
