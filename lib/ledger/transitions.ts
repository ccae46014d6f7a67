/**
 * Guarded transitions of a claimed row (contract section 2), each one call of the database function
 * ledger_move_entry (prisma/functions/ledger_move_entry.sql), where the rules live once: a row moves to a terminal
 * state at most once, a terminal row never moves again, a lease holder's writes carry its fencing token (`attempt`)
 * so a worker whose lease was taken over changes nothing, every move appends its audit row, and a credit changes the
 * wallet (debt repaid first) in the same transaction as the row's final state.
 */
import { retryingPool, pool } from "../db";
import {
  entryColumns,
  ENTRY_COLUMNS,
  toLedgerEntry,
  type EntryStatus,
  type FailureReason,
  type LedgerEntry,
  type StoredResponse,
  type TransitionActor,
} from "./entry";
import { prepared, type Queryable } from "./queryable";
import type { ResponseTemplate } from "./response-template";

/** Who may move the row: a lease holder (fenced by its attempt) or the bank's word (status-guarded only). */
export type TransitionGuard =
  | { readonly kind: "lease"; readonly fencingToken: number }
  /** Webhooks and the reconciler's completion: the bank is the source of truth (contract section 2). */
  | { readonly kind: "status_only" };

export interface EntryRef {
  readonly userId: string;
  readonly entryId: number;
}

export type TransitionOutcome =
  | {
      readonly kind: "moved";
      readonly entry: LedgerEntry;
      readonly fromStatus: EntryStatus;
      readonly balanceMinor: number | null;
    }
  /** The guard did not hold and nothing changed: the row is terminal already, or the caller's lease was taken over. */
  | { readonly kind: "not_moved"; readonly entry: LedgerEntry };

// One call: ledger_move_entry locks the row by its key, moves it if the guard holds, appends the audit row and, when
// asked, credits the wallet, and returns the moved row with the status it left and the new balance (no row: the guard
// did not hold). Arguments by name; the row's columns spelled out for toLedgerEntry.
const TRANSITION_SQL = `
SELECT ${entryColumns("(m.entry)")}, m.from_status, m.balance_minor
  FROM ledger_move_entry(
         p_user_id => $1, p_entry_id => $2::bigint, p_to_status => $3, p_actor => $8, p_attempt => $6::int,
         p_failure_reason => $4, p_bank_charge_id => $5, p_credit => $7::boolean, p_detail => $9) AS m`;

const SELECT_BY_ID_SQL = `SELECT ${ENTRY_COLUMNS} FROM ledger_entries WHERE user_id = $1 AND id = $2`;

interface TransitionSpec {
  /** Where the row goes; the state machine of ledger_move_entry says from where it may. */
  readonly to: EntryStatus;
  readonly failureReason: FailureReason | null;
  readonly bankChargeId: string | null;
  readonly credit: boolean;
  readonly actor: TransitionActor;
  readonly guard: TransitionGuard;
  readonly detail: string | null;
}

async function transition(ref: EntryRef, spec: TransitionSpec, db: Queryable): Promise<TransitionOutcome> {
  const result = await db.query(
    prepared("ledger_transition", TRANSITION_SQL, [
      ref.userId,
      ref.entryId,
      spec.to,
      spec.failureReason,
      spec.bankChargeId,
      spec.guard.kind === "lease" ? spec.guard.fencingToken : null,
      spec.credit,
      spec.actor,
      spec.detail,
    ]),
  );
  const row = result.rows[0];
  // A row back means this call, and no other, made the move (the guard of ledger_move_entry's UPDATE).
  if (row) {
    return {
      kind: "moved",
      entry: toLedgerEntry(row),
      fromStatus: row.from_status as EntryStatus,
      balanceMinor: (row.balance_minor as number | null) ?? null,
    };
  }
  const current = await getEntryById(ref, db);
  if (!current) throw new Error(`ledger entry ${ref.userId}/${ref.entryId} does not exist`);
  return { kind: "not_moved", entry: current };
}

/** Reads one row by its primary key; null when absent. */
export async function getEntryById(ref: EntryRef, db: Queryable = retryingPool()): Promise<LedgerEntry | null> {
  const result = await db.query(prepared("ledger_select_by_id", SELECT_BY_ID_SQL, [ref.userId, ref.entryId]));
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}

/**
 * `initiated` → `processing`: recorded just before the external call, so that from here on the outcome is
 * "the bank may have charged" and nothing may guess it. Lease holders only: `attempt` is the caller's fencing
 * token; `actor` is "request" for the live request, "reconciler" for a re-drive after a take-over.
 * Returns `moved`, or `not_moved` when the row is no longer `initiated` or the lease was taken over.
 */
export function markProcessing(
  ref: EntryRef,
  fencingToken: number,
  options: { readonly actor?: TransitionActor; readonly db?: Queryable } = {},
): Promise<TransitionOutcome> {
  return transition(
    ref,
    {
      to: "processing",
      failureReason: null,
      bankChargeId: null,
      credit: false,
      actor: options.actor ?? "request",
      guard: { kind: "lease", fencingToken },
      detail: null,
    },
    options.db ?? retryingPool(),
  );
}

export interface CompleteOptions {
  readonly actor: TransitionActor;
  readonly guard: TransitionGuard;
  /** Raise the wallet balance by the row's amount in the same statement (credits: top-ups, rewards). */
  readonly credit: boolean;
  readonly bankChargeId?: string | null;
  readonly detail?: string | null;
}

/**
 * Moves an unfinished row to `succeeded`, crediting the wallet in the same statement when `credit` is set.
 * Happens at most once per row, whoever calls it and however often (contract section 1).
 * Returns `moved` (with the new balance for credits) or `not_moved` (already terminal, or fenced out).
 * Throws database errors (a 23505 on the bank-charge index is a bug, never a replay: contract section 8).
 */
export function completeEntry(
  ref: EntryRef,
  options: CompleteOptions,
  db: Queryable = retryingPool(),
): Promise<TransitionOutcome> {
  return transition(
    ref,
    {
      to: "succeeded",
      failureReason: null,
      bankChargeId: options.bankChargeId ?? null,
      credit: options.credit,
      actor: options.actor,
      guard: options.guard,
      detail: options.detail ?? null,
    },
    db,
  );
}

export interface FailOptions {
  readonly actor: TransitionActor;
  readonly guard: TransitionGuard;
  /** Machine-readable reason shown to the user in plain words by the UI (e.g. "declined_by_bank"). */
  readonly reason: FailureReason;
  readonly bankChargeId?: string | null;
  readonly detail?: string | null;
}

/** Moves an unfinished row to `failed` with a reason. Nothing moves money. Same outcomes as {@link completeEntry}. */
export function failEntry(
  ref: EntryRef,
  options: FailOptions,
  db: Queryable = retryingPool(),
): Promise<TransitionOutcome> {
  return transition(
    ref,
    {
      to: "failed",
      failureReason: options.reason,
      bankChargeId: options.bankChargeId ?? null,
      credit: false,
      actor: options.actor,
      guard: options.guard,
      detail: options.detail ?? null,
    },
    db,
  );
}

const ATTACH_CHARGE_SQL = `
UPDATE ledger_entries SET bank_charge_id = $3, updated_at = now()
 WHERE user_id = $1 AND id = $2 AND status IN ('initiated', 'processing') AND bank_charge_id IS NULL
RETURNING ${ENTRY_COLUMNS}`;

/**
 * Records the bank's charge id on an unfinished row that has none yet (contract section 2: "the row records
 * the bank's charge id when known"). Returns the updated row, or null when the row is terminal or already has one.
 */
export async function attachCharge(
  ref: EntryRef,
  bankChargeId: string,
  db: Queryable = retryingPool(),
): Promise<LedgerEntry | null> {
  const result = await db.query(
    prepared("ledger_attach_charge", ATTACH_CHARGE_SQL, [ref.userId, ref.entryId, bankChargeId]),
  );
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}

// The charge id and the row's first response in one call of ledger_store_response (one commit instead of two): only
// while the row is still in the status the response was built from, has no charge id and no stored response. The
// template's slot is filled with the row's new updated_at, as the API writes times (ledger_iso_ms, ledger_fill_body).
const ATTACH_CHARGE_AND_RESPOND_SQL = `
SELECT ${ENTRY_COLUMNS}
  FROM ledger_store_response(
         p_user_id => $1, p_entry_id => $2::bigint, p_response_status => $4::smallint,
         p_response_body => ledger_fill_body(p_segments => $5::text[], p_value => ledger_iso_ms(now())),
         p_bank_charge_id => $3, p_while_status => $6)`;

/**
 * {@link attachCharge} and {@link storeResponse} in one statement, for the request that learns a pending charge's
 * id and answers at once (contract sections 2 and 3). `response` is the row's first response as it will be after
 * the write: built from a row in status `status`, its `updatedAt` the template's slot for the statement to write the
 * row's new time. Moves nothing unless the row is still in `status`, with no charge id and no stored response.
 * Returns the updated row (its response stored), or null when that guard did not hold: then nothing was written, and
 * the caller takes the two separate steps. Throws database errors.
 */
export async function attachChargeAndRespond(
  ref: EntryRef,
  bankChargeId: string,
  first: { readonly status: EntryStatus; readonly response: ResponseTemplate },
  db: Queryable = retryingPool(),
): Promise<LedgerEntry | null> {
  const result = await db.query(
    prepared("ledger_attach_charge_and_respond", ATTACH_CHARGE_AND_RESPOND_SQL, [
      ref.userId,
      ref.entryId,
      bankChargeId,
      first.response.status,
      first.response.segments,
      first.status,
    ]),
  );
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}

// The first writer wins: ledger_store_response stores only while the row has no response (a row back when it did).
const STORE_RESPONSE_SQL = `SELECT 1 FROM ledger_store_response(
  p_user_id => $1, p_entry_id => $2::bigint, p_response_status => $3::smallint, p_response_body => $4)`;

/**
 * Stores the first response of an operation: the first writer wins (`WHERE response_status IS NULL`,
 * contract section 3). Returns the response now stored for the row: `response` if this call stored it,
 * otherwise the one stored earlier, which the caller must send instead so every answer is identical.
 */
export async function storeResponse(
  ref: EntryRef,
  response: StoredResponse,
  db: Queryable = retryingPool(),
): Promise<{ stored: boolean; response: StoredResponse }> {
  const result = await db.query(
    prepared("ledger_store_response", STORE_RESPONSE_SQL, [ref.userId, ref.entryId, response.status, response.body]),
  );
  if (result.rows.length === 1) return { stored: true, response };
  const current = await getEntryById(ref, db);
  if (!current?.response)
    throw new Error(`ledger entry ${ref.userId}/${ref.entryId}: response neither stored nor present`);
  return { stored: false, response: current.response };
}

// The count, the last error and (once the count reaches $4) the time the row was flagged; only these columns:
// a settlement failure is not a transition, so status, lease and updated_at stay as they are.
// $1 user_id, $2 entry id, $3 description of the error, $4 SETTLE_ATTEMPTS_MAX.
const RECORD_SETTLE_FAILURE_SQL = `
UPDATE ledger_entries
   SET settle_failures = settle_failures + 1,
       settle_last_error = $3,
       settle_flagged_at = CASE WHEN settle_failures + 1 >= $4::int THEN COALESCE(settle_flagged_at, now())
                                ELSE settle_flagged_at END
 WHERE user_id = $1 AND id = $2
RETURNING settle_failures, settle_flagged_at`;

/**
 * Counts one failed attempt to settle a row from the bank's word (contract section 5: a completion that keeps
 * failing is not hidden by a renewed lease). `lastError` describes it for admins (a constraint's name, not a
 * stack); `attemptsMax` is SETTLE_ATTEMPTS_MAX: the attempt that reaches it flags the row (the first flag time is
 * kept). Returns the new count and flag time, or null when the row does not exist. Throws database errors.
 * Runs on the plain pool by default, not `retryingPool()`: a count is not safe to run twice after a lost connection.
 */
export async function recordSettleFailure(
  ref: EntryRef,
  lastError: string,
  attemptsMax: number,
  db: Queryable = pool(),
): Promise<{ failures: number; flaggedAt: Date | null } | null> {
  const result = await db.query(RECORD_SETTLE_FAILURE_SQL, [ref.userId, ref.entryId, lastError, attemptsMax]);
  const row = result.rows[0];
  if (!row) return null;
  return { failures: row.settle_failures as number, flaggedAt: (row.settle_flagged_at as Date | null) ?? null };
}
