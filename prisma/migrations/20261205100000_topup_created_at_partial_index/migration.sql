-- The admin charts' index no longer leads with the entry type (case C25; docs/decisions/045).
--
-- `ledger_entries (type, created_at)` matched any lookup of a row by its key (user_id, type, ref_id) through its
-- first column: on a young ledger, whose statistics make every index look equally cheap, the planner read a top-up by
-- its key through it, that is through every top-up of every user, and the plan stuck with its prepared statement
-- (found when the webhook's one-statement credit was benchmarked: 1,822 rows read per credit after two minutes of
-- top-ups). The charts and the admin list read top-ups only, newest first: a partial index on (created_at, id) of
-- top-ups serves them, and no lookup by key can use it (its predicate names a constant type, the lookup a parameter).
DROP INDEX ledger_entries_type_created_at_idx;
CREATE INDEX ledger_entries_topup_created_at_idx ON ledger_entries (created_at, id) WHERE type = 'topup';
