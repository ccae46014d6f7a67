-- ledger_debit_verdict: whether a wallet, as its lock left it, covers a debit of `p_amount_minor` (contract section 8:
-- insufficient funds is decided by the debit itself; section 12: nothing is spent while a debt is open):
-- `debt_outstanding` while the wallet owes anything, else `insufficient_funds` when the balance is short, else
-- `covered`.
--
-- The one statement of the spending rule. Called by ledger_decide_payment and ledger_claim_refund (their decisions,
-- under the wallet's lock) and by ledger_debit_wallet (the debit's own guard, so it cannot disagree with them).
-- IMMUTABLE: it reads only its arguments, and is inlined where it is called.
CREATE OR REPLACE FUNCTION ledger_debit_verdict(p_wallet wallets, p_amount_minor bigint)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN (p_wallet).debt_minor > 0 THEN 'debt_outstanding'
              WHEN (p_wallet).balance_minor < p_amount_minor THEN 'insufficient_funds'
              ELSE 'covered' END
$$;
