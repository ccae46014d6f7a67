/**
 * The claim (contract section 1): `INSERT ... ON CONFLICT (user_id, type, ref_id) DO NOTHING RETURNING`
 * at READ COMMITTED decides, in PostgreSQL, which request does the work. Losers read the row in a
 * separate statement and replay its stored response, wait for it, or are refused when their parameters
 * differ (the claim runner's loser path, ./claim-runner.ts). Never check-then-act.
 */
import { retryingPool } from "../db";
import { ENTRY_COLUMNS, toLedgerEntry, type LedgerEntry, type StoredResponse, type TransitionActor } from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";
import { classifyDbError } from "./db-errors";

export interface ClaimRequest {
  readonly key: OperationKey;
  /** Positive integer in minor units of `currency`. */
  readonly amountMinor: number;
  /** ISO 4217 code, e.g. "USD". */
  readonly currency: string;
  /** Everything that defines the operation (amount, currency, type-specific fields); fingerprinted. */
  readonly params: OperationParams;
  /** Lease owner recorded on the row while the winner works (see worker.ts). */
  readonly leaseOwner: string;
  /** Lease length in milliseconds; after it the reconciler may take the row over. */
  readonly leaseMs: number;
  readonly actor: TransitionActor;
  /** An `adjustment`'s failed top-up (its row id, same user): required for adjustments, absent otherwise. */
  readonly adjustsEntryId?: number;
}

/** Outcomes of reading a key that another request already claimed. */
export type ExistingOutcome =
  | { readonly kind: "replay"; readonly response: StoredResponse }
  | { readonly kind: "mismatch"; readonly fields: string[] }
  | { readonly kind: "in_progress"; readonly retryAfterS: number };

// The claim is the database function ledger_claim (prisma/functions/ledger_claim.sql): the one INSERT ... ON CONFLICT
// (user_id, type, ref_id) DO NOTHING of the ledger, with its audit row. Arguments by name.
const INSERT_CLAIM_SQL = `SELECT ${ENTRY_COLUMNS}
  FROM ledger_claim(
         p_user_id => $1, p_type => $2, p_ref_id => $3, p_amount_minor => $4::bigint, p_currency => $5,
         p_fingerprint => $6, p_params => $7::jsonb, p_actor => $10, p_lease_owner => $8, p_lease_ms => $9::int,
         p_adjusts_entry_id => $11::bigint)`;

const SELECT_BY_KEY_SQL = `SELECT ${ENTRY_COLUMNS} FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id = $3`;

/**
 * Tries to claim `request.key` on `db` (the pool for an autocommit claim, or a transaction's client when the
 * work happens in the same transaction). Returns the new row, status `initiated`, lease held by
 * `request.leaseOwner` with `attempt` 1, and its first audit transition; or `null` when the key already has a
 * row. When another transaction holds an uncommitted claim on the key this waits for it: its commit makes
 * this return null, its rollback lets this insert (docs/development.md note 15).
 * Throws database errors as they come (classify them with db-errors.ts).
 */
export async function insertClaim(db: Queryable, request: ClaimRequest): Promise<LedgerEntry | null> {
  const { key } = request;
  const result = await db.query(
    prepared("ledger_insert_claim", INSERT_CLAIM_SQL, [
      key.userId,
      key.type,
      key.refId,
      request.amountMinor,
      request.currency,
      fingerprint(key.type, request.params),
      JSON.stringify(request.params),
      request.leaseOwner,
      request.leaseMs,
      request.actor,
      request.adjustsEntryId ?? null,
    ]),
  );
  // The race is decided here: exactly one INSERT per key returns a row. An empty RETURNING means another
  // request owns the key; it is not a result and must be followed by a read of that row (case C02).
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}

/**
 * {@link insertClaim}, treating a unique violation of the claim index itself as a lost claim. ON CONFLICT
 * makes that error unexpected, but a wrapped 23505 naming the claim index means exactly "someone else owns
 * the key" (contract section 8, case C01); any other error, including a 23505 on another index, is rethrown.
 */
export async function insertClaimOrLose(db: Queryable, request: ClaimRequest): Promise<LedgerEntry | null> {
  try {
    return await insertClaim(db, request);
  } catch (error) {
    if (classifyDbError(error).kind === "already_claimed") return null;
    throw error;
  }
}

/** Reads the row of `key` in its own statement (a fresh READ COMMITTED snapshot); null when none exists. */
export async function findEntryByKey(key: OperationKey, db: Queryable = retryingPool()): Promise<LedgerEntry | null> {
  const result = await db.query(prepared("ledger_select_by_key", SELECT_BY_KEY_SQL, [key.userId, key.type, key.refId]));
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}
