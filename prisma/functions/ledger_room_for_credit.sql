-- ledger_room_for_credit: whether a credit of `p_amount_minor` fits under the balance ceiling, decided under the
-- wallet's lock (contract section 5: no charge without room for its credit; cases C15 and C27; docs/decisions/048):
-- `balance + amount + the money that may still arrive <= p_max_balance_minor` (MAX_BALANCE_MINOR), where the money
-- that may still arrive is ledger_pending_credits_minor (unfinished top-ups and refunds other than
-- `p_except_entry_id`, chargebacks not reversed). Returns the verdict, the figures, and the sentence an audit row keeps
-- when there is no room (the caller puts its actor in front).
--
-- Called by every admission under the ceiling: ledger_claim_topup, ledger_admit_topup (which excludes its own row)
-- and ledger_decide_reward. The lock lasts until the calling transaction ends, so two admissions of one wallet decide
-- one after the other; the sum runs in a statement after the lock was granted, so it sees every entry committed by a
-- session that held the lock before.
CREATE OR REPLACE FUNCTION ledger_room_for_credit(
  p_user_id text,
  p_currency text,
  p_amount_minor bigint,
  p_max_balance_minor bigint,
  p_except_entry_id bigint DEFAULT NULL,
  OUT room boolean,
  OUT balance_minor bigint,
  OUT pending_minor bigint,
  OUT detail text
)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  SELECT w.balance_minor INTO balance_minor FROM ledger_lock_wallet(p_user_id, p_currency) AS w;
  pending_minor := ledger_pending_credits_minor(p_user_id, p_except_entry_id);
  room := balance_minor + p_amount_minor + pending_minor <= p_max_balance_minor;
  detail := format('balance %s + %s + pending credits %s > %s', balance_minor, p_amount_minor, pending_minor,
                   p_max_balance_minor);
END
$$;
