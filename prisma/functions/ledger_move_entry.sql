-- ledger_move_entry: a guarded transition of a claimed entry (contract section 2), the one UPDATE of an entry's status
-- in the ledger, and the one place of the row's state machine: `initiated` -> `processing`, and `initiated` or
-- `processing` -> `succeeded` or `failed`; nothing else. A terminal entry never moves again, whoever asks and however
-- often, and a `processing` entry never goes back. A lease holder passes its fencing token
-- (`p_attempt`), so a worker whose lease was taken over changes nothing; the webhook and the reconciler's completion
-- pass NULL (the bank's word: a status guard only). A move to a terminal status ends the lease. The audit row and,
-- with `p_credit`, the wallet's credit of the entry's amount (ledger_credit_wallet: debt repaid first, and its journal
-- transaction), or a reserved amount's settlement (ledger_journal: a refund that succeeded), are written in the same
-- transaction as the move, so money moves and is booked exactly when the entry does, once.
--
-- Returns the moved row, the status it left and the wallet's new balance (NULL without a credit); no row when the
-- guard did not hold and nothing changed (the caller reads the row to see why).
--
-- Called by lib/ledger/transitions.ts (`markProcessing`, `completeEntry`, `failEntry`), ledger_admit_topup,
-- ledger_release_reservation and ledger_settle_matching_entry. The row is locked first, by primary key, to read the
-- status it leaves (case C25: every access by key).
CREATE OR REPLACE FUNCTION ledger_move_entry(
  p_user_id text,
  p_entry_id bigint,
  p_to_status text,
  p_actor text,
  p_attempt int DEFAULT NULL,
  p_failure_reason text DEFAULT NULL,
  p_bank_charge_id text DEFAULT NULL,
  p_credit boolean DEFAULT false,
  p_detail text DEFAULT NULL
) RETURNS TABLE (entry ledger_entries, from_status text, balance_minor bigint)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_from text;
  v_entry ledger_entries;
  v_balance_minor bigint;
  v_ends_lease boolean := p_to_status IN ('succeeded', 'failed');
BEGIN
  SELECT e.status INTO v_from FROM ledger_entries e WHERE e.user_id = p_user_id AND e.id = p_entry_id FOR UPDATE;
  -- The guard: the state machine, and the caller's token when it holds a lease.
  UPDATE ledger_entries e
     SET status = p_to_status,
         failure_reason = p_failure_reason,
         bank_charge_id = COALESCE(p_bank_charge_id, e.bank_charge_id),
         lease_owner = CASE WHEN v_ends_lease THEN NULL ELSE e.lease_owner END,
         lease_expires_at = CASE WHEN v_ends_lease THEN NULL ELSE e.lease_expires_at END,
         updated_at = now()
   WHERE e.user_id = p_user_id AND e.id = p_entry_id
     AND ((p_to_status = 'processing' AND e.status = 'initiated')
          OR (p_to_status IN ('succeeded', 'failed') AND e.status IN ('initiated', 'processing')))
     AND (p_attempt IS NULL OR e.attempt = p_attempt)
  RETURNING e.* INTO v_entry;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  PERFORM ledger_log_transition(p_user_id, p_entry_id, v_from, p_to_status, p_actor, v_entry.attempt, p_detail);
  IF p_credit THEN
    SELECT w.balance_minor INTO v_balance_minor FROM ledger_credit_wallet(p_entry => v_entry) AS w;
  END IF;
  -- What a claim reserved (a refund's money, taken from the wallet at its claim) is settled by its success: the
  -- types with a `settle` rule (ledger_journal_rules) post it from where it was held to its counter-party.
  IF p_to_status = 'succeeded'
     AND EXISTS (SELECT 1 FROM ledger_journal_rules r WHERE r.type = v_entry.type AND r.event = 'settle') THEN
    PERFORM ledger_journal(p_entry => v_entry, p_event => 'settle', p_wallet_after_minor => NULL);
  END IF;
  RETURN QUERY SELECT v_entry, v_from, v_balance_minor;
END
$$;
