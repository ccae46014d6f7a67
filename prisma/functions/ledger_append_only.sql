-- ledger_append_only: refuses every UPDATE and DELETE of an append-only ledger table: `ledger_transitions`, the history
-- of every status transition (contract section 2), and `ledger_postings`, the books (contract section 13). What a
-- dispute, a reconciler pass, an auditor or an admin reads to know how money came to be where it is may not be changed
-- or removed by any writer, whichever door it came through (request, webhook, reconciler, an admin's SQL): a
-- correction is a new, balanced transaction that reverses.
--
-- Called by the triggers ledger_transitions_no_update_delete and ledger_postings_no_update_delete (BEFORE UPDATE OR
-- DELETE, FOR EACH ROW; in prisma/migrations/20261211100000_double_entry_books, because a trigger is schema). No lib/
-- file calls it. It raises restrict_violation (SQLSTATE 23001), so the statement fails and its transaction rolls back.
CREATE OR REPLACE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'restrict_violation';
END $$;
