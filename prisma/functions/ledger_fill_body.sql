-- ledger_fill_body: a stored first response whose value SQL decides (a time, a debt), put together from the segments
-- the app cut at named JSON paths (lib/ledger/response-template.ts): the value goes between every two segments, by
-- position. Nothing is searched for in the body, so no text a user chose (a reference, a note) can be mistaken for a
-- slot (contract section 3: the stored body is the first response, byte for byte).
--
-- Called by ledger_decide_payment, ledger_decide_reward and lib/ledger/transitions.ts `attachChargeAndRespond`.
-- `p_value` must be JSON-safe as it stands inside a JSON string (a time, a decimal figure: no quote, no backslash).
CREATE OR REPLACE FUNCTION ledger_fill_body(p_segments text[], p_value text)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT array_to_string(p_segments, p_value)
$$;
