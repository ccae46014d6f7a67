-- ledger_release_reservation: an unfinished refund or payout failed as `declined_by_bank` and what its claim reserved
-- given back, at most once (contract sections 11 and 14; docs/decisions/035, 048 and 060). Call it only on the bank's
-- word that the refund or payout failed (a failure event is a claim until the bank confirms it).
--
-- Called by lib/ledger/refunds.ts (`releaseReservation`). Returns the failed row and the wallet's new balance, or no
-- row when the row is not an unfinished refund or payout (terminal already: a release happens at most once, whoever
-- calls).
--
-- Statements, in the lock order of the claim that reserved (so a claim and a release of one user never deadlock): the
-- entry is moved first (ledger_move_entry, status guard only: the bank's word); for a refund, its top-up's remainder is
-- given back before the wallet (ledger_claim_refund locks the top-up, then the wallet); then the wallet is credited
-- (ledger_credit_wallet: a debt that opened meanwhile is repaid first; its journal transaction is the entry's
-- `release`, from where the claim held the money back to the wallet); for a payout, its share of its day's withdrawal
-- limit is given back after the wallet (ledger_claim_payout locks the wallet, then raises the day's row). The credit is never refused for the ceiling: admission counted the reservation as money
-- that may still arrive (case C27). One the database still refuses fails the whole call; the caller counts it on the
-- row (case C28).
CREATE OR REPLACE FUNCTION ledger_release_reservation(
  p_user_id text,
  p_entry_id bigint,
  p_bank_ref text,
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
  IF v_type IS NULL OR v_type NOT IN ('refund', 'payout') THEN
    RETURN;
  END IF;
  SELECT (m.entry).* INTO entry
    FROM ledger_move_entry(p_user_id => p_user_id, p_entry_id => p_entry_id, p_to_status => 'failed',
                           p_actor => p_actor, p_failure_reason => 'declined_by_bank',
                           p_bank_charge_id => p_bank_ref,
                           p_detail => p_detail) AS m;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF entry.type = 'refund' THEN
    UPDATE ledger_entries t SET refunded_minor = t.refunded_minor - entry.amount_minor
     WHERE t.user_id = p_user_id AND t.id = entry.refunds_entry_id;
  END IF;
  SELECT w.balance_minor INTO balance_minor
    FROM ledger_credit_wallet(p_entry => entry, p_event => 'release') AS w;
  IF entry.type = 'payout' THEN
    UPDATE payout_limit_days d SET reserved_minor = d.reserved_minor - entry.amount_minor
     WHERE d.user_id = p_user_id AND d.day = to_char(entry.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD');
  END IF;
END
$$;
