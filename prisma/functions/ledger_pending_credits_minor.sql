-- ledger_pending_credits_minor: the minor units that may still reach p_user_id's balance without an admission of
-- their own (contract sections 5, 11 and 12; case C27; docs/decisions/048): unfinished top-ups (their credit) and
-- unfinished refunds and payouts (a failure gives their reservation back), other than p_except_entry_id, the entry being
-- admitted; and succeeded chargebacks without a reversal (a reversal credits them back). An upper bound: a reversal
-- repays debt first, and an unfinished top-up may fail.
--
-- Called by ledger_admit_topup, ledger_claim_topup and ledger_decide_reward (the files beside this one), every
-- admission under the balance ceiling, so that a give-back, which is never refused for the ceiling (it is the user's
-- own money), lands without taking the wallet past MAX_BALANCE_MINOR. No lib/ file calls it directly; the money
-- rule lives here once, not in a copy per caller.
--
-- Call it after taking the wallet's lock, in a statement of its own (a VOLATILE caller's statement takes its
-- snapshot after the lock was granted), so it sees every entry a session that held the lock before committed.
-- Every table access goes through the partial indexes ledger_entries_unfinished_give_backs_idx and
-- ledger_entries_chargebacks_idx on (user_id), or the claim's unique index for the reversal (case C25;
-- tests/integration/plan-stability.test.ts). Valid on PostgreSQL 15 and 18.
--
-- LANGUAGE sql: PostgreSQL checks its body when the file is applied, so every table and function it names must
-- exist by then (tables come from the numbered migrations, which run first; a function from a file that sorts
-- before this one).
CREATE OR REPLACE FUNCTION ledger_pending_credits_minor(p_user_id text, p_except_entry_id bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT (SELECT COALESCE(sum(e.amount_minor), 0)
            FROM ledger_entries e
           WHERE e.user_id = p_user_id AND e.type IN ('topup', 'refund', 'payout') AND e.status IN ('initiated', 'processing')
             AND e.id IS DISTINCT FROM p_except_entry_id)
       + (SELECT COALESCE(sum(c.amount_minor), 0)
            FROM ledger_entries c
           WHERE c.user_id = p_user_id AND c.type = 'chargeback' AND c.status = 'succeeded'
             AND NOT EXISTS (SELECT 1 FROM ledger_entries r
                              WHERE r.user_id = c.user_id AND r.type = 'chargeback_reversal' AND r.ref_id = c.ref_id))
$$;
