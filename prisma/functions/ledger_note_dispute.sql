-- ledger_note_dispute: the bank's word on a dispute of a charge, noted on the entry that credited the charge (a top-up,
-- or the adjustment of a failed one): `open`, `lost` or `won` (outright, or reversed after a loss), only ever forward,
-- so a stale reading applied after a newer one changes nothing (contract section 12; case C26; docs/decisions/048).
-- A refund's claim refuses while it is open or lost (ledger_claim_refund), so what goes back to the card is never
-- both a refund and a chargeback of the same money.
--
-- Called by lib/chargebacks/apply-dispute.ts (through lib/ledger `noteDisputeStatus`) for every dispute it applies,
-- before a chargeback's debit. The update takes the entry's row lock, the first lock of every statement about a
-- top-up's money (then the wallet's), so a refund's claim and a chargeback racing on one top-up never deadlock: the
-- second sees the first. Returns true when the entry changed.
CREATE OR REPLACE FUNCTION ledger_note_dispute(p_user_id text, p_entry_id bigint, p_dispute_status text)
RETURNS boolean
LANGUAGE sql VOLATILE AS $$
  WITH noted AS (
    UPDATE ledger_entries e SET dispute_status = p_dispute_status
     WHERE e.user_id = p_user_id AND e.id = p_entry_id AND e.type IN ('topup', 'adjustment')
       AND COALESCE(array_position(ARRAY['open', 'lost', 'won'], e.dispute_status), 0)
           < array_position(ARRAY['open', 'lost', 'won'], p_dispute_status)
    RETURNING 1
  )
  SELECT EXISTS (SELECT 1 FROM noted)
$$;
