-- ledger_decide_transfer: a transfer between two users claimed and decided in one round trip (contract section 15;
-- docs/decisions/061): the sender's entry born terminal with its stored first response, and on success the sender's
-- debit, the recipient's `transfer_in` entry and its credit, all in the caller's one autocommit statement. A transfer
-- is final: nothing is left unfinished, so nothing needs a lease or a reconciler.
--
-- Called by lib/ledger/transfer-statement.ts (`decideTransferUnderWalletLocks`). Returns the sender's row it
-- claimed, or no row when the key already has one (the caller takes the loser's path).
--
-- Statements, in order:
-- 1. both wallets' locks, the lower user id first (the one lock order of every statement that locks two wallets, so
--    A -> B and B -> A at once wait for each other instead of deadlocking): the sender's by ledger_lock_wallet, the
--    recipient's by ledger_room_for_credit, which also says whether the credit fits under the recipient's balance
--    ceiling (counting the money that may still reach it, as every admission does);
-- 2. the decision on the sender's wallet as its lock left it (ledger_debit_verdict: a debt open, then the balance),
--    then the recipient's room;
-- 3. the sender's claim (ledger_claim), born terminal: `succeeded` with the stored 201, or `failed` with
--    `debt_outstanding`, `insufficient_funds` (402) or `recipient_cannot_receive` (422); nothing when the key has a
--    row;
-- 4. for a claimed success: the sender's debit (ledger_debit_wallet, its journal transaction into
--    `transfers_in_transit`), the recipient's entry (ledger_claim, keyed `transfer:<sender's entry id>`, born
--    `succeeded`) and its credit (ledger_credit_wallet: a debt repaid first; its journal transaction out of
--    `transfers_in_transit`), so the house account nets to zero at every commit.
CREATE OR REPLACE FUNCTION ledger_decide_transfer(
  p_user_id text,
  p_ref_id text,
  p_recipient_id text,
  p_amount_minor bigint,
  p_currency text,
  p_fingerprint text,
  p_params jsonb,
  p_recipient_fingerprint text,
  p_recipient_params jsonb,
  p_max_balance_minor bigint,
  p_succeeded_body text[],
  p_insufficient_body text,
  p_debt_body text[],
  p_no_room_body text
) RETURNS SETOF ledger_entries
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_wallet wallets;
  v_room boolean;
  v_verdict text;
  v_entry ledger_entries;
  v_in ledger_entries;
BEGIN
  IF p_recipient_id = p_user_id THEN
    RAISE EXCEPTION 'ledger_decide_transfer: user % cannot transfer to themselves', p_user_id;
  END IF;
  IF p_user_id < p_recipient_id THEN
    v_wallet := ledger_lock_wallet(p_user_id => p_user_id, p_currency => p_currency);
  END IF;
  SELECT r.room INTO v_room FROM ledger_room_for_credit(
    p_user_id => p_recipient_id, p_currency => p_currency, p_amount_minor => p_amount_minor,
    p_max_balance_minor => p_max_balance_minor) AS r;
  IF p_user_id > p_recipient_id THEN
    v_wallet := ledger_lock_wallet(p_user_id => p_user_id, p_currency => p_currency);
  END IF;
  v_verdict := ledger_debit_verdict(p_wallet => v_wallet, p_amount_minor => p_amount_minor);
  IF v_verdict = 'covered' AND NOT v_room THEN
    v_verdict := 'recipient_cannot_receive';
  END IF;
  SELECT * INTO v_entry FROM ledger_claim(
    p_user_id => p_user_id, p_type => 'transfer', p_ref_id => p_ref_id, p_amount_minor => p_amount_minor,
    p_currency => p_currency, p_fingerprint => p_fingerprint, p_params => p_params, p_actor => 'request',
    p_status => CASE v_verdict WHEN 'covered' THEN 'succeeded' ELSE 'failed' END,
    p_failure_reason => CASE v_verdict WHEN 'covered' THEN NULL ELSE v_verdict END,
    p_response_status => CASE v_verdict WHEN 'covered' THEN 201 WHEN 'recipient_cannot_receive' THEN 422
                                        ELSE 402 END::smallint,
    p_response_body => CASE v_verdict WHEN 'covered' THEN ledger_fill_body(p_succeeded_body, ledger_iso_ms(now()))
                                      WHEN 'debt_outstanding'
                                      THEN ledger_fill_body(p_debt_body, ledger_minor_text(v_wallet.debt_minor))
                                      WHEN 'recipient_cannot_receive' THEN p_no_room_body
                                      ELSE p_insufficient_body END);
  -- No row: the key already had one (another request's claim, or this request's own earlier attempt).
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF v_verdict = 'covered' THEN
    IF ledger_debit_wallet(p_entry => v_entry) IS NULL THEN
      RAISE EXCEPTION 'transfer % of user %: decided under the wallet lock, then not debited', p_ref_id, p_user_id;
    END IF;
    SELECT * INTO STRICT v_in FROM ledger_claim(
      p_user_id => p_recipient_id, p_type => 'transfer_in', p_ref_id => 'transfer:' || v_entry.id,
      p_amount_minor => p_amount_minor, p_currency => p_currency, p_fingerprint => p_recipient_fingerprint,
      p_params => p_recipient_params || jsonb_build_object('transferEntryId', v_entry.id::text),
      p_actor => 'request', p_status => 'succeeded', p_detail => 'received: transfer ' || v_entry.id);
    PERFORM ledger_credit_wallet(p_entry => v_in);
  END IF;
  RETURN NEXT v_entry;
END
$$;
