-- ledger_transitions' append-only trigger runs ledger_append_only(), the function that guards ledger_postings too
-- (prisma/functions/ledger_append_only.sql; docs/decisions/058), instead of ledger_transitions_append_only(), which
-- named one table. In a migration of its own, after the books' backfill: DROP TRIGGER takes an ACCESS EXCLUSIVE lock
-- on ledger_transitions (reads of a user's history, an admin's timeline and the reconciler wait for it), held only
-- for this short transaction. The function exists: the previous migration created its placeholder when missing.
DROP TRIGGER ledger_transitions_no_update_delete ON ledger_transitions;
CREATE TRIGGER ledger_transitions_no_update_delete
  BEFORE UPDATE OR DELETE ON ledger_transitions
  FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
DROP FUNCTION ledger_transitions_append_only();
