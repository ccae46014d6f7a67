/**
 * Names of the database objects the ledger's decisions depend on. They must match
 * prisma/migrations/20261129000000_init/migration.sql exactly: the error classifier
 * (lib/ledger/db-errors.ts) compares them byte for byte, and a rename in SQL that is not made here
 * turns every "already claimed" into an internal error (fail closed), never the other way round.
 */

/**
 * The claim index: `UNIQUE (user_id, type, ref_id)` on ledger_entries. `ON CONFLICT (user_id, type, ref_id)`
 * resolves against it, and a 23505 counts as "already claimed" only when it names this index
 * (contract section 8, case C01).
 */
export const CLAIM_INDEX = "ledger_entries_user_id_type_ref_id_key";
