-- ledger_reverse_transfer: an admin's reversal of a succeeded transfer, claimed and its money moved in one round trip
-- (contract section 15; docs/decisions/063): the sender's `transfer_reversal` entry (a credit) born `succeeded` with its
-- stored first response, the recipient's `transfer_reversal_out` entry (a debit) and both movements, in the caller's
-- one autocommit statement. A transfer is final: its reversal is a new balanced pair of entries, never an edit of it.
--
-- Called by lib/ledger/transfer-reversal.ts (`reverseTransferUnderWalletLocks`). Returns the sender's reversal row it
-- claimed, or no row when the key already has one (the caller takes the loser's path).
--
-- Statements, in order:
-- 1. both wallets' locks, the lower user id first (the one lock order of every statement that locks two wallets,
--    ledger_decide_transfer's: a reversal and a new transfer between the same two users, in either direction, wait
--    for each other instead of deadlocking);
-- 2. the transfer, read by its key: it must be the sender's `succeeded` transfer, and the recipient's `transfer_in`
--    (keyed `transfer:<its entry id>`) must be the named recipient's, of the same amount. The caller checked the
--    first and found the second; a terminal row never moves, so a disagreement here is a bug, raised, nothing moved;
-- 3. the sender's claim (ledger_claim), keyed `(sender, "transfer_reversal", <the transfer's ref id>)` and born
--    `succeeded` with the stored 201: the race between admins is decided there, so a transfer is reversed at most
--    once however often it is asked; nothing when the key has a row;
-- 4. for a claimed reversal: the recipient's entry (ledger_claim, keyed `transfer_reversal:<the sender's reversal
--    entry id>`, which the claim above has just made unique, so it can never be taken) and its debit
--    (ledger_debit_into_debt: never refused; what the recipient's balance no longer covers becomes their debt, as a
--    chargeback's does; its journal transaction into `transfers_in_transit`), then the sender's credit
--    (ledger_credit_wallet: a debt of theirs repaid first, never refused for the ceiling, as a payout's return is
--    not: it is the sender's own money coming back; its journal transaction out of `transfers_in_transit`), so the
--    house account nets to zero at every commit.
CREATE OR REPLACE FUNCTION ledger_reverse_transfer(
  p_user_id text,
  p_ref_id text,
  p_recipient_id text,
  p_fingerprint text,
  p_params jsonb,
  p_recipient_fingerprint text,
  p_recipient_params jsonb,
  p_succeeded_body text[],
  p_detail text
) RETURNS SETOF ledger_entries
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_transfer ledger_entries;
  v_in ledger_entries;
  v_entry ledger_entries;
  v_out ledger_entries;
BEGIN
  IF p_recipient_id = p_user_id THEN
    RAISE EXCEPTION 'ledger_reverse_transfer: user % cannot have sent a transfer to themselves', p_user_id;
  END IF;
  SELECT * INTO v_transfer FROM ledger_entries
   WHERE user_id = p_user_id AND type = 'transfer' AND ref_id = p_ref_id;
  IF NOT FOUND OR v_transfer.status <> 'succeeded' THEN
    RAISE EXCEPTION 'ledger_reverse_transfer: transfer % of user % is not a succeeded transfer', p_ref_id, p_user_id;
  END IF;
  IF p_user_id < p_recipient_id THEN
    PERFORM ledger_lock_wallet(p_user_id => p_user_id, p_currency => v_transfer.currency);
    PERFORM ledger_lock_wallet(p_user_id => p_recipient_id, p_currency => v_transfer.currency);
  ELSE
    PERFORM ledger_lock_wallet(p_user_id => p_recipient_id, p_currency => v_transfer.currency);
    PERFORM ledger_lock_wallet(p_user_id => p_user_id, p_currency => v_transfer.currency);
  END IF;
  SELECT * INTO v_in FROM ledger_entries
   WHERE user_id = p_recipient_id AND type = 'transfer_in' AND ref_id = 'transfer:' || v_transfer.id;
  IF NOT FOUND OR v_in.status <> 'succeeded' OR v_in.amount_minor <> v_transfer.amount_minor
     OR v_in.currency <> v_transfer.currency THEN
    RAISE EXCEPTION 'ledger_reverse_transfer: transfer % of user % was not received by user %', p_ref_id, p_user_id,
      p_recipient_id;
  END IF;
  SELECT * INTO v_entry FROM ledger_claim(
    p_user_id => p_user_id, p_type => 'transfer_reversal', p_ref_id => p_ref_id,
    p_amount_minor => v_transfer.amount_minor, p_currency => v_transfer.currency, p_fingerprint => p_fingerprint,
    p_params => p_params, p_actor => 'admin', p_status => 'succeeded',
    p_response_status => 201::smallint,
    p_response_body => ledger_fill_body(p_succeeded_body, ledger_iso_ms(now())),
    p_detail => p_detail || ': transfer ' || v_transfer.id);
  -- No row: the key already had one (another admin's reversal, or this request's own earlier attempt).
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT * INTO STRICT v_out FROM ledger_claim(
    p_user_id => p_recipient_id, p_type => 'transfer_reversal_out', p_ref_id => 'transfer_reversal:' || v_entry.id,
    p_amount_minor => v_transfer.amount_minor, p_currency => v_transfer.currency,
    p_fingerprint => p_recipient_fingerprint,
    p_params => p_recipient_params || jsonb_build_object('reversalEntryId', v_entry.id::text,
                                                         'transferInEntryId', v_in.id::text),
    p_actor => 'admin', p_status => 'succeeded', p_detail => p_detail || ': received transfer ' || v_in.id);
  PERFORM ledger_debit_into_debt(p_entry => v_out);
  PERFORM ledger_credit_wallet(p_entry => v_entry);
  RETURN NEXT v_entry;
END
$$;
