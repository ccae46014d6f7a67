-- ledger_store_response: an entry's first response (contract section 3), stored only when the entry has none yet: the
-- first writer wins, so a request, a webhook and the reconciler finishing one entry all answer with the same bytes.
-- Returns true when this call stored it; false when a response was stored before (the caller reads and sends that one).
--
-- Called by lib/ledger/transitions.ts (`storeResponse`) and ledger_admit_topup (a refusal's 422).
CREATE OR REPLACE FUNCTION ledger_store_response(
  p_user_id text,
  p_entry_id bigint,
  p_response_status smallint,
  p_response_body text
) RETURNS boolean
LANGUAGE sql VOLATILE AS $$
  WITH stored AS (
    UPDATE ledger_entries e SET response_status = p_response_status, response_body = p_response_body
     WHERE e.user_id = p_user_id AND e.id = p_entry_id AND e.response_status IS NULL
    RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM stored)
$$;
