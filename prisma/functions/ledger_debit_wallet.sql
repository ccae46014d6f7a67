-- ledger_debit_wallet: the conditional debit of `p_amount_minor` (contract section 8: insufficient funds is decided
-- by the debit itself; section 12: nothing is spent while a debt is open): the balance goes down only when
-- ledger_debit_verdict says the wallet covers it. Returns the new balance, or NULL when nothing was debited. The balance CHECK is the
-- last line of defence, so a CHECK violation here means a guard failed: an internal error, never a refusal.
--
-- Called by ledger_decide_payment and ledger_claim_refund, under the wallet's lock they took to decide, so it cannot
-- disagree with their decision.
CREATE OR REPLACE FUNCTION ledger_debit_wallet(p_user_id text, p_amount_minor bigint)
RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  UPDATE wallets w SET balance_minor = w.balance_minor - p_amount_minor, updated_at = now()
   WHERE w.user_id = p_user_id AND ledger_debit_verdict(p_wallet => w, p_amount_minor => p_amount_minor) = 'covered'
  RETURNING w.balance_minor
$$;
