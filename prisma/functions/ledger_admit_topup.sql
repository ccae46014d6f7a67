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
-- 1. the room (ledger_room_for_credit, without this top-up's own amount among the pending credits): the wallet's lock,
--    then the money that may still reach the wallet, so that a give-back, never refused for the ceiling, still fits;
-- 2. with room: initiated -> processing (ledger_move_entry, guarded by the caller's fencing token); without room:
--    initiated or processing -> failed (balance_limit_exceeded, same guard, the figures in the audit row), then the
--    refusal's 422 stored first-writer-wins when the row is failed for that reason (also an earlier run's);
-- 3. the row as it now is.
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
  v_room record;
  v_entry ledger_entries;
BEGIN
  SELECT * INTO v_room
    FROM ledger_room_for_credit(p_user_id => p_user_id, p_currency => p_currency, p_amount_minor => p_amount_minor,
                                p_max_balance_minor => p_max_balance_minor, p_except_entry_id => p_entry_id);
  IF v_room.room THEN
    PERFORM ledger_move_entry(p_user_id => p_user_id, p_entry_id => p_entry_id, p_to_status => 'processing',
                              p_actor => p_actor, p_attempt => p_attempt);
  ELSE
    PERFORM ledger_move_entry(p_user_id => p_user_id, p_entry_id => p_entry_id, p_to_status => 'failed',
                              p_actor => p_actor, p_attempt => p_attempt, p_failure_reason => 'balance_limit_exceeded',
                              p_detail => p_actor || ': ' || v_room.detail);
    SELECT e.* INTO v_entry FROM ledger_entries e WHERE e.user_id = p_user_id AND e.id = p_entry_id;
    IF v_entry.status = 'failed' AND v_entry.failure_reason = 'balance_limit_exceeded' THEN
      PERFORM ledger_store_response(p_user_id => p_user_id, p_entry_id => p_entry_id,
                                    p_response_status => p_refusal_status, p_response_body => p_refusal_body);
    END IF;
  END IF;

  RETURN QUERY SELECT e.* FROM ledger_entries e WHERE e.user_id = p_user_id AND e.id = p_entry_id;
END
$$;
