-- ledger_debit_into_debt: a chargeback's debit of `p_amount_minor`, the inverse of ledger_credit_wallet (contract
-- section 12; docs/decisions/036): what the balance covers comes off it, the rest becomes debt; the balance never goes
-- below zero. Creates the wallet (in `p_currency`, owing the whole amount) when the user has none: a charge credited
-- here always has one, so that is a guard. Both SET expressions read the row as it was before the update. Returns the
-- wallet as it is now.
--
-- Called by ledger_land_dispute_entry, the only debit that may not be refused (the bank has taken the money back).
CREATE OR REPLACE FUNCTION ledger_debit_into_debt(p_user_id text, p_amount_minor bigint, p_currency text)
RETURNS wallets
LANGUAGE sql VOLATILE AS $$
  INSERT INTO wallets AS w (user_id, balance_minor, debt_minor, currency)
  VALUES (p_user_id, 0, p_amount_minor, p_currency)
  ON CONFLICT (user_id) DO UPDATE
     SET balance_minor = GREATEST(w.balance_minor - EXCLUDED.debt_minor, 0),
         debt_minor = w.debt_minor + GREATEST(EXCLUDED.debt_minor - w.balance_minor, 0),
         updated_at = now()
  RETURNING w.*
$$;
