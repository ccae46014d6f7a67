-- Money at the edges (docs/decisions/048; contract sections 5, 11 and 12; cases C26, C27, C28).
--
-- 1. A dispute's state on the entry that credited its charge (a top-up, or the adjustment of a failed one), so that
--    the refund claim, which locks that row, refuses while a dispute is open or lost: what goes back to the card is
--    then never both a refund and a chargeback of the same money (C26). `dispute_status` follows the bank's word
--    and only moves forward: NULL -> open -> lost -> won (won outright, or reversed after a loss), open -> won. It
--    is written by lib/chargebacks/apply-dispute.ts under that row's lock, in the transaction that lands the
--    dispute's entries; the row's status, amount and stored response never change.
-- 2. Money that may still arrive, counted once: ledger_pending_credits_minor sums what can still raise a wallet's
--    balance without an admission of its own: unfinished top-ups (their credit), unfinished refunds (a failure gives
--    their reservation back) and chargebacks not yet reversed (a reversal credits them back). Every admission under
--    the ceiling (the top-up's claim and re-drive, the reward) counts it, so a give-back, which is never refused for
--    the ceiling (it is the user's own money), lands without taking the wallet past MAX_BALANCE_MINOR (C27).
--    The three deciding functions are replaced with the same signatures and the same statements, the former sum of
--    unfinished top-ups replaced by a call of that one function.
-- Every table access is by the wallet's key, through a partial index on (user_id), or through the claim's unique
-- index (case C25; tests/integration/plan-stability.test.ts). Valid on PostgreSQL 15 and 18.

ALTER TABLE ledger_entries ADD COLUMN dispute_status text;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_dispute_status_check
  CHECK (dispute_status IS NULL OR (dispute_status IN ('open', 'lost', 'won') AND type IN ('topup', 'adjustment')));

-- Unfinished top-ups and refunds of one user: the rows that finish within seconds or minutes, so the index stays
-- small at any ledger size. It replaces the top-ups-only index it covers.
CREATE INDEX ledger_entries_unfinished_credits_idx ON ledger_entries (user_id)
  WHERE type IN ('topup', 'refund') AND status IN ('initiated', 'processing');
DROP INDEX ledger_entries_unfinished_topups_idx;
-- One user's chargebacks (few: a dispute per disputed charge); their reversals are found through the claim index.
CREATE INDEX ledger_entries_chargebacks_idx ON ledger_entries (user_id) WHERE type = 'chargeback';

-- Minor units that may still reach p_user_id's balance without an admission: unfinished top-ups and refunds (other
-- than p_except_entry_id, the entry being admitted) and succeeded chargebacks without a reversal. An upper bound: a
-- reversal repays debt first, and an unfinished top-up may fail. Call it after taking the wallet's lock, in a
-- statement of its own (a VOLATILE caller's statement takes its snapshot after the lock was granted), so it sees
-- every entry a session that held the lock before committed.
CREATE FUNCTION ledger_pending_credits_minor(p_user_id text, p_except_entry_id bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT (SELECT COALESCE(sum(e.amount_minor), 0)
            FROM ledger_entries e
           WHERE e.user_id = p_user_id AND e.type IN ('topup', 'refund') AND e.status IN ('initiated', 'processing')
             AND e.id IS DISTINCT FROM p_except_entry_id)
       + (SELECT COALESCE(sum(c.amount_minor), 0)
            FROM ledger_entries c
           WHERE c.user_id = p_user_id AND c.type = 'chargeback' AND c.status = 'succeeded'
             AND NOT EXISTS (SELECT 1 FROM ledger_entries r
                              WHERE r.user_id = c.user_id AND r.type = 'chargeback_reversal' AND r.ref_id = c.ref_id))
$$;

-- ledger_admit_topup (20261204100000), with the pending credits in place of the other unfinished top-ups.
CREATE OR REPLACE FUNCTION ledger_admit_topup(
  p_user_id text,
  p_entry_id bigint,
  p_amount_minor bigint,
  p_currency text,
  p_attempt int,
  p_actor text,
  p_max_balance_minor bigint,
  p_refusal_status smallint,
  p_refusal_body text
) RETURNS SETOF ledger_entries
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_balance_minor bigint;
  v_pending_minor bigint;
BEGIN
  SELECT w.balance_minor INTO v_balance_minor FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO wallets (user_id, balance_minor, currency) VALUES (p_user_id, 0, p_currency)
    ON CONFLICT (user_id) DO NOTHING;
    SELECT w.balance_minor INTO v_balance_minor FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  END IF;

  v_pending_minor := ledger_pending_credits_minor(p_user_id, p_entry_id);

  IF v_balance_minor + p_amount_minor + v_pending_minor <= p_max_balance_minor THEN
    WITH moved AS (
      UPDATE ledger_entries e SET status = 'processing', failure_reason = NULL, updated_at = now()
       WHERE e.user_id = p_user_id AND e.id = p_entry_id AND e.status = 'initiated' AND e.attempt = p_attempt
      RETURNING e.user_id, e.id, e.attempt
    )
    INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
    SELECT m.user_id, m.id, 'initiated', 'processing', p_actor, m.attempt, NULL FROM moved m;
  ELSE
    WITH prev AS (
      SELECT e.user_id, e.id, e.status FROM ledger_entries e
       WHERE e.user_id = p_user_id AND e.id = p_entry_id FOR UPDATE
    ), moved AS (
      UPDATE ledger_entries e
         SET status = 'failed', failure_reason = 'balance_limit_exceeded', lease_owner = NULL,
             lease_expires_at = NULL, updated_at = now()
        FROM prev
       WHERE e.user_id = p_user_id AND e.id = p_entry_id
         AND e.status IN ('initiated', 'processing') AND e.attempt = p_attempt
      RETURNING e.user_id, e.id, e.attempt, prev.status AS from_status
    )
    INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
    SELECT m.user_id, m.id, m.from_status, 'failed', p_actor, m.attempt,
           format('%s: balance %s + %s + pending credits %s > %s', p_actor, v_balance_minor, p_amount_minor,
                  v_pending_minor, p_max_balance_minor)
      FROM moved m;

    UPDATE ledger_entries e SET response_status = p_refusal_status, response_body = p_refusal_body
     WHERE e.user_id = p_user_id AND e.id = p_entry_id AND e.response_status IS NULL
       AND e.status = 'failed' AND e.failure_reason = 'balance_limit_exceeded';
  END IF;

  RETURN QUERY SELECT e.* FROM ledger_entries e WHERE e.user_id = p_user_id AND e.id = p_entry_id;
END
$$;

-- ledger_claim_topup (20261205110000), with the pending credits in place of the unfinished top-ups.
CREATE OR REPLACE FUNCTION ledger_claim_topup(
  p_user_id text,
  p_ref_id text,
  p_amount_minor bigint,
  p_currency text,
  p_fingerprint text,
  p_params jsonb,
  p_lease_owner text,
  p_lease_ms int,
  p_actor text,
  p_max_balance_minor bigint,
  p_refusal_status smallint,
  p_refusal_body text
) RETURNS SETOF ledger_entries
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_balance_minor bigint;
  v_pending_minor bigint;
  v_room boolean;
BEGIN
  SELECT w.balance_minor INTO v_balance_minor FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO wallets (user_id, balance_minor, currency) VALUES (p_user_id, 0, p_currency)
    ON CONFLICT (user_id) DO NOTHING;
    SELECT w.balance_minor INTO v_balance_minor FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  END IF;

  v_pending_minor := ledger_pending_credits_minor(p_user_id);

  v_room := v_balance_minor + p_amount_minor + v_pending_minor <= p_max_balance_minor;

  RETURN QUERY
  WITH claimed AS (
    INSERT INTO ledger_entries
      (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, failure_reason, lease_owner,
       lease_expires_at, response_status, response_body)
    VALUES (p_user_id, 'topup', p_ref_id, p_amount_minor, p_currency, p_fingerprint, p_params,
            CASE WHEN v_room THEN 'processing' ELSE 'failed' END,
            CASE WHEN v_room THEN NULL ELSE 'balance_limit_exceeded' END,
            CASE WHEN v_room THEN p_lease_owner END,
            CASE WHEN v_room THEN now() + p_lease_ms * interval '1 millisecond' END,
            CASE WHEN v_room THEN NULL ELSE p_refusal_status END,
            CASE WHEN v_room THEN NULL ELSE p_refusal_body END)
    ON CONFLICT (user_id, type, ref_id) DO NOTHING
    RETURNING *
  ), logged AS (
    INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
    SELECT c.user_id, c.id, step.from_status, step.to_status, p_actor, c.attempt, step.detail
      FROM claimed c
     CROSS JOIN LATERAL (VALUES
       (1, NULL::text, 'initiated'::text, NULL::text),
       (2, 'initiated', c.status,
        CASE WHEN v_room THEN NULL
             ELSE format('%s: balance %s + %s + pending credits %s > %s', p_actor, v_balance_minor,
                         p_amount_minor, v_pending_minor, p_max_balance_minor) END)
     ) AS step (n, from_status, to_status, detail)
     ORDER BY step.n
  )
  SELECT * FROM claimed;
END
$$;

-- ledger_decide_reward (20261207100000), with the pending credits in place of the unfinished top-ups.
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
