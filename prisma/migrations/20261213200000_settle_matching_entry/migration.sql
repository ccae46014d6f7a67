-- The webhook's one-statement settlement now serves payouts as well as top-ups (docs/decisions/064): the functions
-- webhook_credit_topup and ledger_credit_matching_topup become webhook_settle_entry and ledger_settle_matching_entry
-- (prisma/functions/), which take the entry type. A signature change is a drop here and the new file
-- (docs/decisions/052).
DROP FUNCTION IF EXISTS webhook_credit_topup(text, text, text, text, text, text, bigint, text, text);
DROP FUNCTION IF EXISTS ledger_credit_matching_topup(text, text, text, bigint, text, text, text);
