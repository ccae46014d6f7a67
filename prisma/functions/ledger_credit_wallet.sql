-- ledger_credit_wallet: the credit of an entry's amount to its user's wallet, repaying the wallet's debt first (contract
-- section 12: what a chargeback took that the balance could not cover is owed, and every credit repays it before
-- anything reaches the balance; docs/decisions/036), and its journal transaction (ledger_journal, `p_event`: `move`, or
-- a refund's `release`; contract section 13) in the same call. Creates the wallet (in the entry's currency) when the
-- user has none. Both SET expressions read the row as it was before the update. Returns the wallet as it is now.
--
-- The one credit of the ledger: ledger_move_entry (a top-up, an adjustment, a chargeback's reversal completed with a
-- credit), ledger_decide_reward, ledger_release_reservation (a failed refund's money given back),
-- ledger_land_bank_entry (a reversal), ledger_decide_transfer (a transfer received) and ledger_reverse_transfer (a
-- transfer's reversal, back to its sender). Never refused for the ceiling: the admissions made room for it first
-- (ledger_room_for_credit), and what is not admitted is the user's own money coming back (a chargeback's reversal, a
-- payout's return, a transfer's reversal: docs/decisions/063); the balance CHECK is the last line of defence.
CREATE OR REPLACE FUNCTION ledger_credit_wallet(p_entry ledger_entries, p_event text DEFAULT 'move')
RETURNS wallets
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_wallet wallets;
BEGIN
  INSERT INTO wallets AS w (user_id, balance_minor, currency)
  VALUES (p_entry.user_id, p_entry.amount_minor, p_entry.currency)
  ON CONFLICT (user_id) DO UPDATE
     SET balance_minor = w.balance_minor + GREATEST(EXCLUDED.balance_minor - w.debt_minor, 0),
         debt_minor = GREATEST(w.debt_minor - EXCLUDED.balance_minor, 0),
         updated_at = now()
  RETURNING w.* INTO v_wallet;
  PERFORM ledger_journal(p_entry => p_entry, p_event => p_event,
                         p_wallet_after_minor => v_wallet.balance_minor - v_wallet.debt_minor);
  RETURN v_wallet;
END
$$;
