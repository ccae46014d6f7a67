-- ledger_lock_wallet: the user's wallet row, locked FOR UPDATE until the calling transaction ends; created first with
-- balance 0 (in `p_currency`) when the user has none, so that there is always a row to lock.
--
-- Every money movement of a user takes this lock before it decides (contract sections 1 and 5: no charge without room,
-- no overdraft), so two movements of one wallet decide one after the other. The lock order is the same everywhere:
-- the entry a refund or a dispute is about (its top-up) first, then the wallet (ledger_claim_refund,
-- ledger_release_reservation, ledger_land_bank_entry), so two of them never deadlock.
--
-- Called by ledger_room_for_credit, ledger_decide_payment and ledger_claim_refund. A caller that must decide on the
-- wallet as the lock left it reads it in a statement after this call (a VOLATILE PL/pgSQL function's statements each
-- take a new snapshot under READ COMMITTED; a statement that waited for a lock decides on its own, older snapshot).
CREATE OR REPLACE FUNCTION ledger_lock_wallet(p_user_id text, p_currency text)
RETURNS wallets
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_wallet wallets;
BEGIN
  SELECT w.* INTO v_wallet FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO wallets (user_id, balance_minor, currency) VALUES (p_user_id, 0, p_currency)
    ON CONFLICT (user_id) DO NOTHING;
    SELECT w.* INTO v_wallet FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  END IF;
  RETURN v_wallet;
END
$$;
