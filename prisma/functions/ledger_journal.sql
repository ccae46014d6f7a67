-- ledger_journal: the journal transaction of one money-moving event of an entry (contract section 13;
-- docs/decisions/058): two postings that sum to zero, `amount_minor` taken from one account and given to the other, as
-- ledger_journal_rules says for the entry's type and `p_event` (`move`; a refund's `reserve`, `settle` or `release`).
-- The wallet's leg records the account's balance after it, `p_wallet_after_minor` (the wallet's balance minus its
-- debt, as the caller's update left it); NULL for an event without a wallet leg (a refund's `settle`).
--
-- The only writer of ledger_postings. Called by the wallet's credit and debits (ledger_credit_wallet,
-- ledger_debit_wallet, ledger_debit_into_debt) in the statement that moves the wallet, and by ledger_move_entry for a
-- refund's settlement: every posting is written in the transaction that makes its entry's money final, once, because
-- its caller runs once per entry (the entry's claim or its guarded transition). The primary key
-- (user_id, entry_id, event, account) refuses a second transaction for the same event, a guard behind that guard.
-- No hot row: a house account's leg is an insert, never an update. Raises when the entry's type has no rule for the
-- event (a movement without books is a bug, not a movement).
CREATE OR REPLACE FUNCTION ledger_journal(p_entry ledger_entries, p_event text, p_wallet_after_minor bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_legs int;
BEGIN
  INSERT INTO ledger_postings (user_id, entry_id, event, account, amount_minor, currency, balance_after_minor)
  SELECT p_entry.user_id, p_entry.id, p_event, leg.account, leg.amount_minor, p_entry.currency,
         CASE WHEN leg.account = 'wallet' THEN p_wallet_after_minor END
    FROM ledger_journal_rules r
   CROSS JOIN LATERAL (VALUES (r.from_account, -p_entry.amount_minor), (r.to_account, p_entry.amount_minor))
                   AS leg(account, amount_minor)
   WHERE r.type = p_entry.type AND r.event = p_event;
  GET DIAGNOSTICS v_legs = ROW_COUNT;
  IF v_legs <> 2 THEN
    RAISE EXCEPTION 'ledger_journal: no rule for % %', p_entry.type, p_event USING ERRCODE = 'check_violation';
  END IF;
END
$$;
