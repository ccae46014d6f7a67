-- ledger_decide_payment: a payment claimed and decided in one round trip, under the wallet row's lock (contract
-- sections 1, 8 and 12; docs/decisions/040, second amendment).
--
-- Called by lib/ledger/payment-statement.ts (`decidePaymentUnderWalletLock`: SELECT <entry columns> FROM
-- ledger_decide_payment($1, ..., $12)). Returns the row it claimed, already terminal with its stored first response,
-- or no row when the key already has one (the caller takes the loser's path).
--
-- The deciding statement's snapshot must be taken after the wallet lock: a statement's snapshot is taken before it
-- waits for a lock, so a statement that locked the wallet itself would, after waiting on a credit, decide on the
-- credit's version while its debit re-checked an older one. A VOLATILE PL/pgSQL function takes a new snapshot for
-- each statement it runs (READ COMMITTED), so the lock and the decision are two statements here, in the caller's one
-- autocommit statement: one round trip instead of four (BEGIN, lock, decide, COMMIT). The lock lasts until the
-- calling statement commits.
--
-- Statements, in order:
-- 1. the wallet's lock (ledger_lock_wallet; the wallet created with 0 when missing, so a wallet a credit creates
--    meanwhile is always the locked one), which returns the row as the lock left it;
-- 2. the decision on that version (ledger_debit_verdict: covered when the balance covers the amount and no debt is
--    open; contract section 8: insufficient funds is decided by the debit itself; section 12: nothing is spent while a
--    debt is open);
-- 3. the claim (ledger_claim), born terminal: `succeeded` with the stored 201 (its times written as the row's), or
--    `failed` with `debt_outstanding` (the debt written into its body) or `insufficient_funds`; nothing when the key
--    has a row;
-- 4. for a claimed success, the debit (ledger_debit_wallet), under the same lock, so it cannot disagree with the
--    decision; if it ever did, the call fails and nothing is written (the balance CHECK stays the last defence).
-- The bodies' values go between the segments the app cut at named JSON paths (ledger_fill_body).
--
-- Every table access is by primary key or through the claim index's ON CONFLICT arbiter, so no plan PL/pgSQL caches
-- can scan a table (case C25; tests/integration/plan-stability.test.ts). Valid on PostgreSQL 15 and 18.
CREATE OR REPLACE FUNCTION ledger_decide_payment(
  p_user_id text,
  p_ref_id text,
  p_amount_minor bigint,
  p_currency text,
  p_fingerprint text,
  p_params jsonb,
  p_succeeded_status smallint,
  p_succeeded_body text[],
  p_insufficient_status smallint,
  p_insufficient_body text,
  p_debt_status smallint,
  p_debt_body text[]
) RETURNS SETOF ledger_entries
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_wallet wallets;
  v_verdict text;
  v_entry ledger_entries;
BEGIN
  v_wallet := ledger_lock_wallet(p_user_id => p_user_id, p_currency => p_currency);
  v_verdict := ledger_debit_verdict(p_wallet => v_wallet, p_amount_minor => p_amount_minor);
  SELECT * INTO v_entry FROM ledger_claim(
    p_user_id => p_user_id, p_type => 'payment', p_ref_id => p_ref_id, p_amount_minor => p_amount_minor,
    p_currency => p_currency, p_fingerprint => p_fingerprint, p_params => p_params, p_actor => 'request',
    p_status => CASE v_verdict WHEN 'covered' THEN 'succeeded' ELSE 'failed' END,
    p_failure_reason => CASE v_verdict WHEN 'covered' THEN NULL ELSE v_verdict END,
    p_response_status => CASE v_verdict WHEN 'covered' THEN p_succeeded_status
                                        WHEN 'debt_outstanding' THEN p_debt_status ELSE p_insufficient_status END,
    p_response_body => CASE v_verdict WHEN 'covered' THEN ledger_fill_body(p_succeeded_body, ledger_iso_ms(now()))
                                      WHEN 'debt_outstanding'
                                      THEN ledger_fill_body(p_debt_body, ledger_minor_text(v_wallet.debt_minor))
                                      ELSE p_insufficient_body END);
  -- No row: the key already had one (another request's claim, or this request's own earlier attempt).
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF v_verdict = 'covered' AND ledger_debit_wallet(p_entry => v_entry) IS NULL THEN
    RAISE EXCEPTION 'payment % of user %: decided under the wallet lock, then not debited', p_ref_id, p_user_id;
  END IF;
  RETURN NEXT v_entry;
END
$$;
