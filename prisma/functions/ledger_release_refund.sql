-- ledger_release_refund: an unfinished refund failed as `declined_by_bank` and its reservation given back, wallet and
-- top-up's remainder together, at most once (contract section 11; docs/decisions/035 and 048). Call it only on the
-- bank's word that the refund failed (a `refund.failed` event is a claim until the bank confirms it).
--
-- Called by lib/ledger/refunds.ts (`releaseRefund`). Returns the failed row and the wallet's new balance, or no row
-- when the row is not an unfinished refund (terminal already: a release happens at most once, whoever calls).
--
-- Statements, in the lock order of every statement about a top-up's money: the refund row is moved first
-- (ledger_move_entry, status guard only: the bank's word), then the top-up's remainder is given back, then the wallet
-- is credited (ledger_credit_wallet: a debt that opened while the refund was in flight is repaid first; its journal
-- transaction is the refund's `release`, from refunds in flight back to the wallet). The credit
-- is never refused for the ceiling: admission counted the reservation as money that may still arrive (case C27).
-- One the database still refuses fails the whole call; the caller counts it on the row (case C28).
CREATE OR REPLACE FUNCTION ledger_release_refund(
  p_user_id text,
  p_entry_id bigint,
  p_bank_refund_id text,
  p_actor text,
  p_detail text,
  OUT entry ledger_entries,
  OUT balance_minor bigint
)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_type text;
BEGIN
  SELECT e.type INTO v_type FROM ledger_entries e WHERE e.user_id = p_user_id AND e.id = p_entry_id;
  IF v_type IS DISTINCT FROM 'refund' THEN
    RETURN;
  END IF;
  SELECT (m.entry).* INTO entry
    FROM ledger_move_entry(p_user_id => p_user_id, p_entry_id => p_entry_id, p_to_status => 'failed',
                           p_actor => p_actor, p_failure_reason => 'declined_by_bank',
                           p_bank_charge_id => p_bank_refund_id,
                           p_detail => p_detail) AS m;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  UPDATE ledger_entries t SET refunded_minor = t.refunded_minor - entry.amount_minor
   WHERE t.user_id = p_user_id AND t.id = entry.refunds_entry_id;
  SELECT w.balance_minor INTO balance_minor
    FROM ledger_credit_wallet(p_entry => entry, p_event => 'release') AS w;
END
$$;
