-- ledger_credit_wallet: a credit of `p_amount_minor` to the user's wallet, repaying its debt first (contract section
-- 12: what a chargeback took that the balance could not cover is owed, and every credit repays it before anything
-- reaches the balance; docs/decisions/036). Creates the wallet (in `p_currency`) when the user has none. Both SET
-- expressions read the row as it was before the update. Returns the wallet as it is now.
--
-- The one credit of the ledger: ledger_move_entry (a top-up, an adjustment, a chargeback's reversal completed with a
-- credit), ledger_decide_reward, ledger_release_refund (a failed refund's money given back) and
-- ledger_land_dispute_entry (a reversal). Never refused for the ceiling: the admissions made room for it first
-- (ledger_room_for_credit); the balance CHECK is the last line of defence.
CREATE OR REPLACE FUNCTION ledger_credit_wallet(p_user_id text, p_amount_minor bigint, p_currency text)
RETURNS wallets
LANGUAGE sql VOLATILE AS $$
  INSERT INTO wallets AS w (user_id, balance_minor, currency) VALUES (p_user_id, p_amount_minor, p_currency)
  ON CONFLICT (user_id) DO UPDATE
     SET balance_minor = w.balance_minor + GREATEST(EXCLUDED.balance_minor - w.debt_minor, 0),
         debt_minor = GREATEST(w.debt_minor - EXCLUDED.balance_minor, 0),
         updated_at = now()
  RETURNING w.*
$$;
