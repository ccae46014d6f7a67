-- ledger_admit_topup: the admission of a claimed top-up under the balance ceiling, alone, in one round trip
-- (contract sections 1 and 5, cases C15 and C27; docs/decisions/044 and 048).
--
-- Called by lib/ledger/topup-admission.ts (`admitTopupUnderWalletLock`: SELECT <entry columns> FROM
-- ledger_admit_topup($1, ..., $9)), which lib/topups/admit-topup.ts uses for the reconciler's re-drive of an
-- `initiated` row (written by an older version, or by lib/ledger/claim.ts's plain claim) and for the request whose
-- claim's answer was lost. A request's first claim is admitted by ledger_claim_topup instead. Returns the row as this
-- call left it; the caller reads the decision from it (processing under its attempt: admitted; failed for
-- balance_limit_exceeded: no room; anything else: fenced).
--
-- BEGIN, the wallet lock, the sum, the guarded move and COMMIT would be five round trips; here they run in the
-- caller's one autocommit statement. A VOLATILE PL/pgSQL function takes a new snapshot for each statement it runs
-- (READ COMMITTED), so the sum, run after the lock was granted, sees every entry committed while this call waited
-- for the lock. The locks last until the calling statement commits.
--
-- Statements, in order:
-- 1. lock the wallet row (created with balance 0 first when the user has none, so that there is a row to lock);
-- 2. the money that may still reach the wallet, other than this top-up (ledger_pending_credits_minor: unfinished
--    top-ups and refunds, chargebacks not reversed), so that a give-back, never refused for the ceiling, still fits;
-- 3. with room: initiated -> processing, guarded by the caller's fencing token (attempt), with its audit row;
--    without room: initiated or processing -> failed (balance_limit_exceeded), same guard, audit row with the figures;
--    then the refusal's 422 stored first-writer-wins when the row is failed for that reason (also an earlier run's);
-- 4. the row as it now is.
-- The transitions are lib/ledger/transitions.ts's TRANSITION_SQL for these two moves, the store its STORE_RESPONSE_SQL.
-- Every table access is by primary key, by the wallet's key or through a partial index on (user_id), so no plan
-- PL/pgSQL caches can scan a table (case C25; tests/integration/plan-stability.test.ts reads them). Valid on
-- PostgreSQL 15 and 18.
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
