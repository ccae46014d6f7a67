-- ledger_store_response also stores a pending charge's id with the first response (lib/ledger/transitions.ts
-- `attachChargeAndRespond` no longer writes its own UPDATE with the first-writer-wins guard: docs/decisions/053) and
-- returns the row it stored on instead of a boolean. Its result type and arguments are part of its signature, so the
-- old one is dropped here and prisma/functions/ledger_store_response.sql creates the new one in the same run
-- (docs/development.md, "How to change a database function").
DROP FUNCTION IF EXISTS ledger_store_response(text, bigint, smallint, text);
