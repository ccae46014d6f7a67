-- ledger_minor_text: a non-negative amount in minor units as decimal text with two places (`1234` -> `12.34`), as
-- lib/money.ts `formatMinor` writes it, for a stored body whose figure SQL decides (a payment refused for a debt names
-- the debt as the locked wallet holds it: contract section 12).
--
-- Called by ledger_decide_payment. Amounts are never negative here (a debt and a balance are both >= 0, CHECKed).
CREATE OR REPLACE FUNCTION ledger_minor_text(p_minor bigint)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT (p_minor / 100)::text || '.' || lpad((p_minor % 100)::text, 2, '0')
$$;
