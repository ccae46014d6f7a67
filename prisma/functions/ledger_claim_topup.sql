-- ledger_claim_topup: a request's top-up claimed and admitted in one statement, so one commit (contract sections 1
-- and 5, cases C15 and C27; docs/decisions/044, 045 and 048).
--
-- Called by lib/ledger/topup-admission.ts (`claimAndAdmitTopup`: SELECT <entry columns> FROM
-- ledger_claim_topup($1, ..., $12)), for lib/topups/create-topup.ts. Returns the row as the claim left it, or no row
-- when the key already has one (the caller then takes the loser's path).
--
-- The admission is decided before the claim's insert, so the row is inserted already `processing` (room) or already
-- `failed` for `balance_limit_exceeded` with its stored 422 (no room), and no other session ever sees it `initiated`.
-- Inserting it `initiated` and then moving it would write a second version of the row, with an entry in every index
-- of ledger_entries (the status is in the predicates of its partial indexes, so the update can never be HOT), a dead
-- row for vacuum, and a second notice on `ledger_changes`. The audit trail still has both steps, in order: NULL ->
-- initiated (the claim) and initiated -> processing or failed (the admission, with the figures), because the claim
-- and the admission are two decisions, taken in one statement.
--
-- Two decisions, each in its one place:
-- 1. the room (ledger_room_for_credit): the wallet's lock (the wallet created when missing), then the money that may
--    still reach it in a snapshot taken after the lock. Every caller of a key takes this lock before it inserts, so a
--    claim that waits here and then finds the key taken has cost a wait, never a wrong decision;
-- 2. the claim (ledger_claim): the row inserted `processing` with the lease (room) or `failed` for
--    balance_limit_exceeded with its stored 422 and the figures in its audit row (no room); no row when the key is
--    taken, and the caller takes the loser's path.
-- Every table access is by the wallet's key, through a partial index on (user_id), or the claim's unique index
-- (case C25; tests/integration/plan-stability.test.ts). Valid on PostgreSQL 15 and 18.
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
  v_room record;
BEGIN
  SELECT * INTO v_room
    FROM ledger_room_for_credit(p_user_id => p_user_id, p_currency => p_currency, p_amount_minor => p_amount_minor,
                                p_max_balance_minor => p_max_balance_minor);
  RETURN QUERY
  SELECT * FROM ledger_claim(
    p_user_id => p_user_id, p_type => 'topup', p_ref_id => p_ref_id, p_amount_minor => p_amount_minor,
    p_currency => p_currency, p_fingerprint => p_fingerprint, p_params => p_params, p_actor => p_actor,
    p_status => CASE WHEN v_room.room THEN 'processing' ELSE 'failed' END,
    p_failure_reason => CASE WHEN v_room.room THEN NULL ELSE 'balance_limit_exceeded' END,
    p_lease_owner => p_lease_owner, p_lease_ms => p_lease_ms,
    p_response_status => CASE WHEN v_room.room THEN NULL ELSE p_refusal_status END,
    p_response_body => CASE WHEN v_room.room THEN NULL ELSE p_refusal_body END,
    p_detail => CASE WHEN v_room.room THEN NULL ELSE p_actor || ': ' || v_room.detail END);
END
$$;
