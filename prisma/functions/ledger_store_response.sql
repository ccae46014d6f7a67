-- ledger_store_response: an entry's first response (contract section 3), stored only when the entry has none yet: the
-- first writer wins, so a request, a webhook and the reconciler finishing one entry all answer with the same bytes.
-- The one write of an entry's response after its claim (ledger_claim writes the response of an entry born decided).
--
-- With `p_bank_charge_id`, the pending charge's id is recorded in the same write (contract section 2: "the row
-- records the bank's charge id when known"), and only while the entry has none yet; the row's updated_at becomes
-- now(), the time a body filled with ledger_iso_ms(now()) shows. With `p_while_status`, only while the entry is in
-- that status (the status the response was built from).
--
-- Returns the row as stored when this call stored the response; no row when a response was stored before or a guard
-- did not hold (the caller reads the row and sends the response it holds).
--
-- Called by lib/ledger/transitions.ts (`storeResponse`, `attachChargeAndRespond`) and ledger_admit_topup (a
-- refusal's 422).
CREATE OR REPLACE FUNCTION ledger_store_response(
  p_user_id text,
  p_entry_id bigint,
  p_response_status smallint,
  p_response_body text,
  p_bank_charge_id text DEFAULT NULL,
  p_while_status text DEFAULT NULL
) RETURNS SETOF ledger_entries
LANGUAGE sql VOLATILE AS $$
  UPDATE ledger_entries e
     SET response_status = p_response_status,
         response_body = p_response_body,
         bank_charge_id = COALESCE(p_bank_charge_id, e.bank_charge_id),
         updated_at = CASE WHEN p_bank_charge_id IS NULL THEN e.updated_at ELSE now() END
   WHERE e.user_id = p_user_id AND e.id = p_entry_id
     AND e.response_status IS NULL
     AND (p_bank_charge_id IS NULL OR e.bank_charge_id IS NULL)
     AND (p_while_status IS NULL OR e.status = p_while_status)
  RETURNING e.*
$$;
