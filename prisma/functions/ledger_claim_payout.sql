-- ledger_claim_payout: a withdrawal claimed and its money held in one statement (contract section 14;
-- docs/decisions/060). The amount leaves the wallet's available balance at the claim, before the bank is called, so
-- nothing racing the payout (a payment, a refund, another payout) can spend it; it is held in `payouts_in_flight`
-- until the bank's word posts it (paid: ledger_move_entry's settlement) or gives it back (failed:
-- ledger_release_reservation). The user's held amount is the sum of their unfinished payouts.
--
-- Called by lib/ledger/payouts.ts (`claimPayout`). Returns the verdict and, when this call claimed the key, the row:
-- `held` (the row born `processing` under the caller's lease, as a top-up is: the bank may be called from its commit
-- on; the wallet debited and the day's withdrawals raised), or a
-- refusal stored as the row's first response (`debt_outstanding`, `insufficient_funds`: 402;
-- `payout_limit_exceeded`: 422; the row born `failed`, nothing held). A verdict with no row means the key already had
-- one (the caller takes the loser's path).
--
-- Statements, in order:
-- 1. the wallet's lock (ledger_lock_wallet), read as the lock left it;
-- 2. the day's withdrawals so far (payout_limit_days, the UTC day of the row's own created_at), under that lock;
-- 3. the verdict: the wallet's word first (ledger_debit_verdict: a debt open, then the available balance), then the
--    daily limit;
-- 4. the claim (ledger_claim);
-- 5. for a claim that holds: the day's withdrawals raised, and the debit (ledger_debit_wallet, event `reserve`) under
--    the lock the verdict was taken under.
CREATE OR REPLACE FUNCTION ledger_claim_payout(
  p_user_id text,
  p_ref_id text,
  p_amount_minor bigint,
  p_currency text,
  p_fingerprint text,
  p_params jsonb,
  p_lease_owner text,
  p_lease_ms int,
  p_daily_limit_minor bigint,
  p_insufficient_body text,
  p_debt_body text,
  p_limit_body text,
  OUT verdict text,
  OUT entry ledger_entries,
  OUT balance_minor bigint
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_wallet wallets;
  -- The row's created_at is now() at millisecond precision, rounded: its day is the day this payout counts on.
  v_day text := to_char(now()::timestamptz(3) AT TIME ZONE 'UTC', 'YYYY-MM-DD');
  v_used_minor bigint;
BEGIN
  v_wallet := ledger_lock_wallet(p_user_id => p_user_id, p_currency => p_currency);
  SELECT d.reserved_minor INTO v_used_minor FROM payout_limit_days d WHERE d.user_id = p_user_id AND d.day = v_day;
  verdict := ledger_debit_verdict(p_wallet => v_wallet, p_amount_minor => p_amount_minor);
  IF verdict = 'covered' THEN
    verdict := CASE WHEN COALESCE(v_used_minor, 0) + p_amount_minor > p_daily_limit_minor
                    THEN 'payout_limit_exceeded' ELSE 'held' END;
  END IF;
  SELECT * INTO entry FROM ledger_claim(
    p_user_id => p_user_id, p_type => 'payout', p_ref_id => p_ref_id, p_amount_minor => p_amount_minor,
    p_currency => p_currency, p_fingerprint => p_fingerprint, p_params => p_params, p_actor => 'request',
    p_status => CASE WHEN verdict = 'held' THEN 'processing' ELSE 'failed' END,
    p_failure_reason => CASE WHEN verdict = 'held' THEN NULL ELSE verdict END,
    p_lease_owner => p_lease_owner, p_lease_ms => p_lease_ms,
    p_response_status => CASE verdict WHEN 'held' THEN NULL WHEN 'payout_limit_exceeded' THEN 422
                                      ELSE 402 END::smallint,
    p_response_body => CASE verdict WHEN 'insufficient_funds' THEN p_insufficient_body
                                    WHEN 'debt_outstanding' THEN p_debt_body
                                    WHEN 'payout_limit_exceeded' THEN p_limit_body END,
    p_claim_detail => CASE WHEN verdict = 'held' THEN 'claimed: payout held from the wallet' END,
    p_detail => CASE WHEN verdict = 'held' THEN 'held: the bank may be asked from here on'
                     ELSE 'claimed and refused: nothing held' END);
  -- No row: the key already had one; nothing is held by this call.
  IF NOT FOUND OR verdict <> 'held' THEN
    RETURN;
  END IF;
  INSERT INTO payout_limit_days AS d (user_id, day, reserved_minor) VALUES (p_user_id, v_day, p_amount_minor)
  ON CONFLICT (user_id, day) DO UPDATE SET reserved_minor = d.reserved_minor + EXCLUDED.reserved_minor;
  balance_minor := ledger_debit_wallet(p_entry => entry, p_event => 'reserve');
  IF balance_minor IS NULL THEN
    RAISE EXCEPTION 'payout % of user %: held under the wallet lock, then not debited', p_ref_id, p_user_id;
  END IF;
END
$$;
