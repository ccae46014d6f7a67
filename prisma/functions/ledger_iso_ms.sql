-- ledger_iso_ms: a time as the API writes it, ISO-8601 UTC to the millisecond (`2026-01-01T00:00:00.000Z`), exactly
-- as the app writes the same time read from a row (contract section 4: times are ISO-8601 UTC; a stored body must
-- equal the view the app renders from the row, byte for byte; tests/integration/response-text.test.ts).
--
-- Called wherever SQL writes a time into a stored response: ledger_decide_payment and ledger_decide_reward (a row born
-- succeeded) and lib/ledger/transitions.ts `attachChargeAndRespond`. The rounding is timestamptz(3)'s, the row's own
-- (its timestamps are timestamptz(3)), so the body's time is the row's.
CREATE OR REPLACE FUNCTION ledger_iso_ms(p_at timestamptz)
RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT to_char(p_at::timestamptz(3) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
