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
-- The deciding statement's parts:
-- wallet: the user's wallet row, locked first; none when the lock found no row (then a wallet a credit creates
-- meanwhile is not locked, could be spent by a racing payment, and does not count).
-- decision: what that version allows (contract section 8: the balance covers the amount; section 12: no debt open).
-- claimed: the claim (contract section 1): the row is inserted already terminal, with its failure reason and its
-- stored first response, or nothing is inserted when the key has a row (ON CONFLICT DO NOTHING waits for an
-- uncommitted duplicate and then inserts nothing). Everything below runs only on a row this statement claimed.
-- debited: the conditional debit, only for a claimed success; it repeats the decision's guard on the same locked
-- version, so it cannot disagree with the decision (the balance CHECK stays the last line of defence).
-- logged: the audit rows (claim: NULL -> initiated; decision: initiated -> final), attempt 1.
-- The bodies' slots {{now}} and {{debt}} are lib/ledger's RESPONSE_TIME_SLOT and RESPONSE_DEBT_SLOT.
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
  p_succeeded_body text,
  p_insufficient_status smallint,
  p_insufficient_body text,
  p_debt_status smallint,
  p_debt_body text
) RETURNS SETOF ledger_entries
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  wallet_locked boolean;
BEGIN
  PERFORM 1 FROM wallets WHERE user_id = p_user_id FOR UPDATE;
  wallet_locked := FOUND;
  RETURN QUERY
  WITH wallet AS (
    SELECT w.balance_minor, w.debt_minor FROM wallets w WHERE w.user_id = p_user_id AND wallet_locked
  ), decision AS (
    SELECT COALESCE(w.balance_minor >= p_amount_minor AND w.debt_minor = 0, false) AS covered,
           COALESCE(w.debt_minor, 0) AS debt_minor
      FROM (SELECT 1) AS one LEFT JOIN wallet w ON true
  ), claimed AS (
    INSERT INTO ledger_entries
      (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, failure_reason,
       response_status, response_body)
    SELECT p_user_id, 'payment', p_ref_id, p_amount_minor, p_currency, p_fingerprint, p_params,
           CASE WHEN d.covered THEN 'succeeded' ELSE 'failed' END,
           CASE WHEN d.covered THEN NULL WHEN d.debt_minor > 0 THEN 'debt_outstanding' ELSE 'insufficient_funds' END,
           CASE WHEN d.covered THEN p_succeeded_status WHEN d.debt_minor > 0 THEN p_debt_status
                ELSE p_insufficient_status END,
           CASE WHEN d.covered
                THEN replace(p_succeeded_body, '{{now}}',
                             to_char(now()::timestamptz(3) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                WHEN d.debt_minor > 0
                THEN replace(p_debt_body, '{{debt}}',
                             (d.debt_minor / 100)::text || '.' || lpad((d.debt_minor % 100)::text, 2, '0'))
                ELSE p_insufficient_body END
      FROM decision d
    ON CONFLICT (user_id, type, ref_id) DO NOTHING
    RETURNING *
  ), debited AS (
    UPDATE wallets w SET balance_minor = w.balance_minor - p_amount_minor, updated_at = now()
     WHERE w.user_id = p_user_id AND w.balance_minor >= p_amount_minor AND w.debt_minor = 0
       AND EXISTS (SELECT 1 FROM claimed c WHERE c.status = 'succeeded')
    RETURNING w.balance_minor
  ), logged AS (
    INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt)
    SELECT c.user_id, c.id, step.from_status, step.to_status, 'request', c.attempt
      FROM claimed c
     CROSS JOIN LATERAL (VALUES (1, NULL::text, 'initiated'::text), (2, 'initiated', c.status))
                     AS step(n, from_status, to_status)
     ORDER BY step.n
  )
  SELECT claimed.* FROM claimed;
END
$$;
