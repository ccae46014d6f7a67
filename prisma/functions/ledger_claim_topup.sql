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
-- Statements, in order:
-- 1. lock the wallet row (created with balance 0 first when the user has none, so that there is a row to lock), as
--    ledger_admit_topup does. Every caller of a key takes this lock before it inserts, so a claim that waits here
--    and then finds the key taken (step 3) has cost a wait, never a wrong decision;
-- 2. the money that may still reach the wallet (ledger_pending_credits_minor: unfinished top-ups and refunds,
--    chargebacks not reversed), in a new snapshot taken after the lock was granted (a VOLATILE PL/pgSQL function's
--    statements each take one under READ COMMITTED), so it sees every entry that a session holding the lock before us
--    committed;
-- 3. the claim: INSERT ... ON CONFLICT (user_id, type, ref_id) DO NOTHING with the decided status, lease (kept for
--    `processing`, none for `failed`), failure reason and response, and the two audit rows; no row when the key is
--    taken (an uncommitted duplicate is waited for first, as in lib/ledger/claim.ts), and the caller takes the
--    loser's path.
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
