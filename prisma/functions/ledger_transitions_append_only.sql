-- ledger_transitions_append_only: refuses every UPDATE and DELETE of ledger_transitions, the append-only history of
-- every status transition (contract section 2). The audit trail is what a dispute, a reconciler pass or an admin
-- reads to know how a row came to be as it is, so no writer, whichever door it came through (request, webhook,
-- reconciler, an admin's SQL), may change or remove a step once written.
--
-- Called by the trigger ledger_transitions_no_update_delete (BEFORE UPDATE OR DELETE ON ledger_transitions, FOR EACH
-- ROW; in prisma/migrations/20261129000000_init, because a trigger is schema). No lib/ file calls it; the rows it
-- guards are appended by lib/ledger (transitions.ts and the deciding functions beside this file).
-- It raises restrict_violation (SQLSTATE 23001), so the statement fails and its transaction rolls back.
CREATE OR REPLACE FUNCTION ledger_transitions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'ledger_transitions is append-only' USING ERRCODE = 'restrict_violation';
END $$;
