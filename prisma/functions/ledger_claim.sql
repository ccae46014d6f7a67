-- ledger_claim: the claim (contract section 1), the one INSERT ... ON CONFLICT (user_id, type, ref_id) DO NOTHING of
-- the ledger. The entry is inserted in `p_status`: `initiated` (the claim alone; the work follows), or already
-- `processing` or terminal when the caller decided in the same transaction (a top-up admitted before its insert, a
-- payment or a reward decided under the wallet's lock, a refund refused, a dispute's entry landed). A lease is kept
-- only for an unfinished entry (the row says who works on it); a stored first response only when given. Its audit
-- rows are written with it: NULL -> initiated (with `p_claim_detail`), and, when born further, initiated ->
-- `p_status` with `p_detail`.
--
-- Returns the new row, or no row when the key already has one: at READ COMMITTED an uncommitted claim of the same key
-- is waited for first, its commit makes this insert nothing and its rollback lets this insert (the loser then reads
-- the row in a statement of its own: a claim never reads in the statement that lost). The caller never reads
-- "nothing" as a result (case C02).
--
-- Called by lib/ledger/claim.ts (`insertClaim`: the plain claim of every entry type) and by every function that
-- claims and decides at once (ledger_claim_topup, ledger_decide_payment, ledger_decide_reward, ledger_claim_refund,
-- ledger_land_bank_entry, ledger_claim_payout, ledger_decide_transfer, ledger_reverse_transfer). The insert goes through the claim's unique index only (case C25).
CREATE OR REPLACE FUNCTION ledger_claim(
  p_user_id text,
  p_type text,
  p_ref_id text,
  p_amount_minor bigint,
  p_currency text,
  p_fingerprint text,
  p_params jsonb,
  p_actor text,
  p_status text DEFAULT 'initiated',
  p_failure_reason text DEFAULT NULL,
  p_lease_owner text DEFAULT NULL,
  p_lease_ms int DEFAULT NULL,
  p_response_status smallint DEFAULT NULL,
  p_response_body text DEFAULT NULL,
  p_detail text DEFAULT NULL,
  p_claim_detail text DEFAULT NULL,
  p_adjusts_entry_id bigint DEFAULT NULL,
  p_refunds_entry_id bigint DEFAULT NULL
) RETURNS SETOF ledger_entries
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_unfinished boolean := p_status IN ('initiated', 'processing');
  v_entry ledger_entries;
BEGIN
  INSERT INTO ledger_entries
    (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, failure_reason, lease_owner,
     lease_expires_at, response_status, response_body, adjusts_entry_id, refunds_entry_id)
  VALUES (p_user_id, p_type, p_ref_id, p_amount_minor, p_currency, p_fingerprint, p_params, p_status, p_failure_reason,
          CASE WHEN v_unfinished THEN p_lease_owner END,
          CASE WHEN v_unfinished THEN now() + p_lease_ms * interval '1 millisecond' END,
          p_response_status, p_response_body, p_adjusts_entry_id, p_refunds_entry_id)
  ON CONFLICT (user_id, type, ref_id) DO NOTHING
  RETURNING * INTO v_entry;
  -- The race is decided here: exactly one INSERT per key returns a row. Nothing back: another claim owns the key.
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM ledger_log_transition(v_entry.user_id, v_entry.id, NULL, 'initiated', p_actor, v_entry.attempt,
                                p_claim_detail);
  IF p_status <> 'initiated' THEN
    PERFORM ledger_log_transition(v_entry.user_id, v_entry.id, 'initiated', p_status, p_actor, v_entry.attempt,
                                  p_detail);
  END IF;
  RETURN NEXT v_entry;
END
$$;
