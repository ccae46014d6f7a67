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
-- 1. lock the wallet row, created with balance 0 first when the user has none (as ledger_claim_topup does). Every
--    reward of a user takes this lock before its claim, so a duplicate waits here and then finds the key taken;
-- 2. the money that may still reach the wallet (ledger_pending_credits_minor: unfinished top-ups and refunds,
--    chargebacks not reversed), in a new snapshot taken after the lock (a VOLATILE PL/pgSQL function's statements
--    each take one under READ COMMITTED): room under MAX_BALANCE_MINOR counts them as credited;
-- 3. one statement of data-modifying CTEs:
--    claimed: the claim (contract section 1), inserted terminal: `succeeded` with the stored 201 (its timestamps
--      written as the row's), or `failed` for balance_limit_exceeded with the stored 422; nothing when the key has
--      a row (ON CONFLICT DO NOTHING waits for an uncommitted duplicate first);
--    counted: the day's row in reward_cap_days raised by the credit, only if the day stays within p_cap_minor
--      (the conditional upsert of lib/rewards/raise-reward-day-credit.ts); skipped when p_cap_minor is NULL;
--    credited: the wallet credit, repaying a debt first (contract section 12), only for a succeeded claim;
--    logged: the audit rows (NULL -> initiated, initiated -> final; the refusal's figures as its detail);
-- 4. a succeeded claim the day's row refused (the cap would be passed: Redis handed back a counter below the truth)
--    raises check_violation naming the constraint reward_cap_days_within_cap, which rolls the whole statement back:
--    a 429 leaves no row (contract section 3). lib/ledger recognises it by that SQLSTATE and name
--    (REWARD_CAP_CONSTRAINT in lib/ledger/reward-statement.ts).
-- Every table access is by primary key, through a partial index on (user_id), or through the claim's and the cap
-- row's unique indexes (case C25; tests/integration/plan-stability.test.ts). Valid on PostgreSQL 15 and 18.
-- The success body's slot {{now}} is lib/ledger's RESPONSE_TIME_SLOT.
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
  p_succeeded_body text,
  p_refusal_status smallint,
  p_refusal_body text
) RETURNS TABLE (entry ledger_entries, credited_today_minor bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_balance_minor bigint;
  v_pending_minor bigint;
  v_room boolean;
  v_decided record;
BEGIN
  SELECT w.balance_minor INTO v_balance_minor FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO wallets (user_id, balance_minor, currency) VALUES (p_user_id, 0, p_currency)
    ON CONFLICT (user_id) DO NOTHING;
    SELECT w.balance_minor INTO v_balance_minor FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  END IF;

  v_pending_minor := ledger_pending_credits_minor(p_user_id);

  v_room := v_balance_minor + p_amount_minor + v_pending_minor <= p_max_balance_minor;

  WITH claimed AS (
    INSERT INTO ledger_entries AS e
      (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, failure_reason,
       response_status, response_body)
    VALUES (p_user_id, 'reward', p_ref_id, p_amount_minor, p_currency, p_fingerprint, p_params,
            CASE WHEN v_room THEN 'succeeded' ELSE 'failed' END,
            CASE WHEN v_room THEN NULL ELSE 'balance_limit_exceeded' END,
            CASE WHEN v_room THEN p_succeeded_status ELSE p_refusal_status END,
            CASE WHEN v_room
                 THEN replace(p_succeeded_body, '{{now}}',
                              to_char(now()::timestamptz(3) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                 ELSE p_refusal_body END)
    ON CONFLICT (user_id, type, ref_id) DO NOTHING
    RETURNING e
  ), counted AS (
    INSERT INTO reward_cap_days AS d (user_id, day, credited_minor)
    SELECT (c.e).user_id, p_day, (c.e).amount_minor
      FROM claimed c
     WHERE (c.e).status = 'succeeded' AND p_cap_minor IS NOT NULL AND (c.e).amount_minor <= p_cap_minor
    ON CONFLICT (user_id, day) DO UPDATE
       SET credited_minor = d.credited_minor + EXCLUDED.credited_minor, updated_at = now()
     WHERE d.credited_minor + EXCLUDED.credited_minor <= p_cap_minor
    RETURNING d.credited_minor
  ), credited AS (
    UPDATE wallets w
       SET balance_minor = w.balance_minor + GREATEST((c.e).amount_minor - w.debt_minor, 0),
           debt_minor = GREATEST(w.debt_minor - (c.e).amount_minor, 0),
           updated_at = now()
      FROM claimed c
     WHERE w.user_id = p_user_id AND (c.e).status = 'succeeded'
    RETURNING w.balance_minor
  ), logged AS (
    INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
    SELECT (c.e).user_id, (c.e).id, step.from_status, step.to_status, 'request', (c.e).attempt, step.detail
      FROM claimed c
     CROSS JOIN LATERAL (VALUES
       (1, NULL::text, 'initiated'::text, NULL::text),
       (2, 'initiated', (c.e).status,
        CASE WHEN v_room THEN NULL
             ELSE format('request: balance %s + %s + pending credits %s > %s', v_balance_minor, p_amount_minor,
                         v_pending_minor, p_max_balance_minor) END)
     ) AS step (n, from_status, to_status, detail)
     ORDER BY step.n
  )
  SELECT c.e AS entry, (SELECT k.credited_minor FROM counted k) AS counted_minor
    INTO v_decided
    FROM claimed c;

  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF (v_decided.entry).status = 'succeeded' AND p_cap_minor IS NOT NULL AND v_decided.counted_minor IS NULL THEN
    RAISE EXCEPTION 'reward % of user % would take day % past its cap of %', p_ref_id, p_user_id, p_day, p_cap_minor
      USING ERRCODE = 'check_violation', CONSTRAINT = 'reward_cap_days_within_cap';
  END IF;
  RETURN QUERY SELECT v_decided.entry::ledger_entries, v_decided.counted_minor::bigint;
END
$$;
