-- ledger_debit_wallet: the conditional debit of an entry's amount (contract section 8: insufficient funds is decided by
-- the debit itself; section 12: nothing is spent while a debt is open): the balance goes down only when
-- ledger_debit_verdict says the wallet covers it, and then its journal transaction is written (ledger_journal,
-- `p_event`: a payment's `move`, a refund's `reserve`; contract section 13). Returns the new balance, or NULL when
-- nothing was debited (and nothing posted). The balance CHECK is the last line of defence, so a CHECK violation here
-- means a guard failed: an internal error, never a refusal.
--
-- Called by ledger_decide_payment and ledger_claim_refund, under the wallet's lock they took to decide, so it cannot
-- disagree with their decision.
CREATE OR REPLACE FUNCTION ledger_debit_wallet(p_entry ledger_entries, p_event text DEFAULT 'move')
RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_wallet wallets;
BEGIN
  UPDATE wallets w SET balance_minor = w.balance_minor - p_entry.amount_minor, updated_at = now()
   WHERE w.user_id = p_entry.user_id
     AND ledger_debit_verdict(p_wallet => w, p_amount_minor => p_entry.amount_minor) = 'covered'
  RETURNING w.* INTO v_wallet;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  PERFORM ledger_journal(p_entry => p_entry, p_event => p_event,
                         p_wallet_after_minor => v_wallet.balance_minor - v_wallet.debt_minor);
  RETURN v_wallet.balance_minor;
END
$$;
