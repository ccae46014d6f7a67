-- ledger_decide_reward: a reward claimed, checked against the day's cap and the balance ceiling, and credited, in
-- one round trip under the wallet row's lock (contract sections 1, 3, 5, 6 and 12; cases C15 and C27;
-- docs/decisions/047 and 048).
--
-- Called by lib/ledger/reward-statement.ts (`decideRewardUnderWalletLock`: SELECT ... FROM
-- ledger_decide_reward($1, ..., $13)). Returns the claimed row, terminal, with the day's credited total after it (null
-- when the day's row was not counted), or no row when the key already has one (the caller takes the loser's path).
--
-- It takes the same decisions, in the same order of locks as a payment and a top-up's claim (the wallet row first),
-- inside the caller's one autocommit statement, instead of up to nine round trips. Statements, in order:
-- 1. the room (ledger_room_for_credit): the wallet's lock (created when missing; every reward of a user takes it before
--    its claim, so a duplicate waits there and then finds the key taken), then the money that may still reach the
--    wallet, counted as credited under MAX_BALANCE_MINOR;
-- 2. the claim (ledger_claim), born terminal: `succeeded` with the stored 201 (its times written as the row's), or
--    `failed` for balance_limit_exceeded with the stored 422 and the figures in its audit row; nothing when the key
--    has a row;
-- 3. for a claimed success: the day's row in reward_cap_days raised by the credit, only if the day stays within
--    p_cap_minor (skipped when p_cap_minor is NULL); a day the raise would pass raises check_violation naming the
--    constraint reward_cap_days_within_cap (Redis handed back a counter below the truth), which rolls the whole call
--    back: a 429 leaves no row (contract section 3), and lib/ledger recognises it by that SQLSTATE and name
--    (REWARD_CAP_CONSTRAINT in lib/ledger/reward-statement.ts);
-- 4. the credit (ledger_credit_wallet: a debt repaid first, contract section 12).
-- Every table access is by primary key, through a partial index on (user_id), or through the claim's and the cap
-- row's unique indexes (case C25; tests/integration/plan-stability.test.ts). Valid on PostgreSQL 15 and 18.
-- The success body's times go between the segments the app cut at named JSON paths (ledger_fill_body).
CREATE OR REPLACE FUNCTION ledger_decide_reward(
  p_user_id text,
  p_ref_id text,
  p_amount_minor bigint,
  p_currency text,
  p_fingerprint text,
  p_params jsonb,
  p_day text,
  p_cap_minor bigint,
  p_max_balance_minor bigint,
  p_succeeded_status smallint,
  p_succeeded_body text[],
  p_refusal_status smallint,
  p_refusal_body text
) RETURNS TABLE (entry ledger_entries, credited_today_minor bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_room record;
  v_entry ledger_entries;
  v_counted_minor bigint;
BEGIN
  SELECT * INTO v_room
    FROM ledger_room_for_credit(p_user_id => p_user_id, p_currency => p_currency, p_amount_minor => p_amount_minor,
                                p_max_balance_minor => p_max_balance_minor);
  SELECT * INTO v_entry FROM ledger_claim(
    p_user_id => p_user_id, p_type => 'reward', p_ref_id => p_ref_id, p_amount_minor => p_amount_minor,
    p_currency => p_currency, p_fingerprint => p_fingerprint, p_params => p_params, p_actor => 'request',
    p_status => CASE WHEN v_room.room THEN 'succeeded' ELSE 'failed' END,
    p_failure_reason => CASE WHEN v_room.room THEN NULL ELSE 'balance_limit_exceeded' END,
    p_response_status => CASE WHEN v_room.room THEN p_succeeded_status ELSE p_refusal_status END,
    p_response_body => CASE WHEN v_room.room THEN ledger_fill_body(p_succeeded_body, ledger_iso_ms(now()))
                            ELSE p_refusal_body END,
    p_detail => CASE WHEN v_room.room THEN NULL ELSE 'request: ' || v_room.detail END);
  -- No row: the key already had one (another request's claim, or this request's own earlier attempt).
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF v_entry.status = 'succeeded' THEN
    IF p_cap_minor IS NOT NULL THEN
      INSERT INTO reward_cap_days AS d (user_id, day, credited_minor)
      SELECT p_user_id, p_day, v_entry.amount_minor WHERE v_entry.amount_minor <= p_cap_minor
      ON CONFLICT (user_id, day) DO UPDATE
         SET credited_minor = d.credited_minor + EXCLUDED.credited_minor, updated_at = now()
       WHERE d.credited_minor + EXCLUDED.credited_minor <= p_cap_minor
      RETURNING d.credited_minor INTO v_counted_minor;
      IF v_counted_minor IS NULL THEN
        RAISE EXCEPTION 'reward % of user % would take day % past its cap of %', p_ref_id, p_user_id, p_day,
          p_cap_minor
          USING ERRCODE = 'check_violation', CONSTRAINT = 'reward_cap_days_within_cap';
      END IF;
    END IF;
    PERFORM ledger_credit_wallet(p_entry => v_entry);
  END IF;
  RETURN QUERY SELECT v_entry, v_counted_minor;
END
$$;
