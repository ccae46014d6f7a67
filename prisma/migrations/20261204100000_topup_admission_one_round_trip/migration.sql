-- A top-up's claim and admission in one round trip (contract sections 1 and 5, case C15; docs/decisions/044).
--
-- ledger_admit_topup: the admission alone (the reconciler's re-drive of an `initiated` row, and the request when its
-- claim found its own row after a lost answer). The admission was BEGIN,
-- the wallet lock, the sum of the user's other unfinished top-ups, the guarded move, COMMIT: five round trips. This
-- function runs the same statements in the caller's one autocommit statement. A VOLATILE PL/pgSQL function takes a
-- new snapshot for each statement it runs (READ COMMITTED), so the sum, run after the lock was granted, sees every
-- top-up committed while this call waited for the lock, exactly as the separate statement did. The locks last until
-- the calling statement commits.
--
-- Called by lib/topups/admit-topup.ts (SELECT <entry columns> FROM ledger_admit_topup($1, ..., $9)) for the request
-- and for the reconciler's re-drive. Returns the row as this call left it; the caller reads the decision from it
-- (processing under its attempt: admitted; failed for balance_limit_exceeded: no room; anything else: fenced).
--
-- Statements, in order:
-- 1. lock the wallet row (created with balance 0 first when the user has none, so that there is a row to lock);
-- 2. the sum of the user's unfinished top-ups other than this one (ledger_entries_unfinished_topups_idx);
-- 3. with room: initiated -> processing, guarded by the caller's fencing token (attempt), with its audit row;
--    without room: initiated or processing -> failed (balance_limit_exceeded), same guard, audit row with the figures;
--    then the refusal's 422 stored first-writer-wins when the row is failed for that reason (also an earlier run's);
-- 4. the row as it now is.
-- The transitions are lib/ledger/transitions.ts's TRANSITION_SQL for these two moves, the store its STORE_RESPONSE_SQL.
-- Every table access is by primary key, by the wallet's key or through the partial index on (user_id), so no plan
-- PL/pgSQL caches can scan a table (case C25; tests/integration/plan-stability.test.ts reads them). Valid on
-- PostgreSQL 15 and 18.
CREATE FUNCTION ledger_admit_topup(
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
  v_unfinished_minor bigint;
BEGIN
  SELECT w.balance_minor INTO v_balance_minor FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO wallets (user_id, balance_minor, currency) VALUES (p_user_id, 0, p_currency)
    ON CONFLICT (user_id) DO NOTHING;
    SELECT w.balance_minor INTO v_balance_minor FROM wallets w WHERE w.user_id = p_user_id FOR UPDATE;
  END IF;

  SELECT COALESCE(sum(e.amount_minor), 0)::bigint INTO v_unfinished_minor
    FROM ledger_entries e
   WHERE e.user_id = p_user_id AND e.type = 'topup' AND e.status IN ('initiated', 'processing')
     AND e.id <> p_entry_id;

  IF v_balance_minor + p_amount_minor + v_unfinished_minor <= p_max_balance_minor THEN
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
           format('%s: balance %s + %s + unfinished top-ups %s > %s', p_actor, v_balance_minor, p_amount_minor,
                  v_unfinished_minor, p_max_balance_minor)
      FROM moved m;

    UPDATE ledger_entries e SET response_status = p_refusal_status, response_body = p_refusal_body
     WHERE e.user_id = p_user_id AND e.id = p_entry_id AND e.response_status IS NULL
       AND e.status = 'failed' AND e.failure_reason = 'balance_limit_exceeded';
  END IF;

  RETURN QUERY SELECT e.* FROM ledger_entries e WHERE e.user_id = p_user_id AND e.id = p_entry_id;
END
$$;

-- ledger_claim_topup: the request's claim and its admission in one statement, so one commit instead of two. The
-- claim is the INSERT ... ON CONFLICT DO NOTHING of lib/ledger/claim.ts (INSERT_CLAIM_SQL: the row `initiated`, the
-- lease held by p_lease_owner for p_lease_ms, attempt 1, its audit row); when it inserts nothing (the key has a row;
-- an uncommitted duplicate is waited for first) the function returns no row and the caller takes the loser's path.
-- Otherwise the new row is admitted by ledger_admit_topup above, under its own attempt, and returned as it left it.
-- The row is never seen `initiated` by another session: both moves commit together, after the wallet lock.
CREATE FUNCTION ledger_claim_topup(
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
  v_entry_id bigint;
  v_attempt int;
BEGIN
  WITH claimed AS (
    INSERT INTO ledger_entries
      (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, lease_owner, lease_expires_at)
    VALUES (p_user_id, 'topup', p_ref_id, p_amount_minor, p_currency, p_fingerprint, p_params, 'initiated',
            p_lease_owner, now() + p_lease_ms * interval '1 millisecond')
    ON CONFLICT (user_id, type, ref_id) DO NOTHING
    RETURNING user_id, id, attempt
  ), logged AS (
    INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt)
    SELECT c.user_id, c.id, NULL, 'initiated', p_actor, c.attempt FROM claimed c
  )
  SELECT c.id, c.attempt INTO v_entry_id, v_attempt FROM claimed c;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  RETURN QUERY SELECT * FROM ledger_admit_topup(p_user_id, v_entry_id, p_amount_minor, p_currency, v_attempt,
                                                p_actor, p_max_balance_minor, p_refusal_status, p_refusal_body);
END
$$;
