-- ledger_debit_into_debt: a chargeback's debit of its entry's amount, the inverse of ledger_credit_wallet (contract
-- section 12; docs/decisions/036): what the balance covers comes off it, the rest becomes debt; the balance never goes
-- below zero. Its journal transaction (ledger_journal, `move`; contract section 13) is written in the same call: the
-- wallet account goes below zero by the debt. Creates the wallet (in the entry's currency, owing the whole amount) when
-- the user has none: a charge credited here always has one, so that is a guard. Both SET expressions read the row as
-- it was before the update. Returns the wallet as it is now.
--
-- Called by ledger_land_bank_entry (the bank has taken the money back) and ledger_reverse_transfer (an admin takes a
-- transfer back from its recipient; docs/decisions/063): the only debits that may not be refused.
CREATE OR REPLACE FUNCTION ledger_debit_into_debt(p_entry ledger_entries)
RETURNS wallets
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_wallet wallets;
BEGIN
  INSERT INTO wallets AS w (user_id, balance_minor, debt_minor, currency)
  VALUES (p_entry.user_id, 0, p_entry.amount_minor, p_entry.currency)
  ON CONFLICT (user_id) DO UPDATE
     SET balance_minor = GREATEST(w.balance_minor - EXCLUDED.debt_minor, 0),
         debt_minor = w.debt_minor + GREATEST(EXCLUDED.debt_minor - w.balance_minor, 0),
         updated_at = now()
  RETURNING w.* INTO v_wallet;
  PERFORM ledger_journal(p_entry => p_entry, p_event => 'move',
                         p_wallet_after_minor => v_wallet.balance_minor - v_wallet.debt_minor);
  RETURN v_wallet;
END
$$;
