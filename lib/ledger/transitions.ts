/**
 * Guarded transitions of a claimed row (contract section 2). Each is one SQL statement whose WHERE clause is
 * the guard: a row moves to a terminal state at most once, a terminal row never moves again, and a lease
 * holder's writes carry its fencing token (`attempt`) so a worker whose lease was taken over changes nothing.
 * Every transition appends its audit row in the same statement, and a credit changes the wallet in the same
 * statement (hence the same transaction) as the row's final state.
 */
import { autocommit, pool } from "../db";
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

/** Who may move the row: a lease holder (fenced by its attempt) or the bank's word (status-guarded only). */
export type TransitionGuard =
  | { readonly kind: "lease"; readonly attempt: number }
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

/**
 * The two CTEs that follow a `moved` CTE (the row's new version plus `from_status`) in every statement that moves a
 * row: `credited` raises the wallet by the row's amount when `credit` (SQL) is true and the row moved, repaying the
 * wallet's debt first (contract section 12: what the debt takes never reaches the balance; both SET expressions read
 * the wallet as it was before the update), and `logged` appends the audit row. `credit`, `actor` and `detail` are SQL
 * expressions, parameters in practice.
 */
function creditedAndLogged(sql: { readonly credit: string; readonly actor: string; readonly detail: string }): string {
  return `credited AS (
  INSERT INTO wallets (user_id, balance_minor, currency)
  SELECT user_id, amount_minor, currency FROM moved WHERE ${sql.credit}
  ON CONFLICT (user_id) DO UPDATE
     SET balance_minor = wallets.balance_minor + GREATEST(EXCLUDED.balance_minor - wallets.debt_minor, 0),
         debt_minor = GREATEST(wallets.debt_minor - EXCLUDED.balance_minor, 0),
         updated_at = now()
  RETURNING balance_minor
), logged AS (
  INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
  SELECT user_id, id, from_status, status, ${sql.actor}, attempt, ${sql.detail} FROM moved
)`;
}

// One statement: lock the row (prev, to record the status it leaves), move it if the guard holds (moved),
// credit the wallet when asked and only if the row moved (credited), and append the audit row (logged).
// `moved` names its row by the key parameters, not by a join to `prev`: a join condition is only an index
// condition when the planner expects the joined table to be large, so a generic plan made on an empty ledger
// kept a nested loop that scanned every row per credit (case C25). `prev` is joined for its status only (one row).
// $1 user_id, $2 entry id, $3 target status, $4 failure reason, $5 bank charge id (kept when null),
// $6 fencing attempt (null = status-only guard), $7 credit the wallet?, $8 actor, $9 audit detail,
// $10 allowed source statuses.
const TRANSITION_SQL = `
WITH prev AS (
  SELECT user_id, id, status FROM ledger_entries WHERE user_id = $1 AND id = $2 FOR UPDATE
), moved AS (
  UPDATE ledger_entries e
     SET status = $3::text,
         failure_reason = $4,
         bank_charge_id = COALESCE($5, e.bank_charge_id),
         lease_owner = CASE WHEN $3::text IN ('succeeded', 'failed') THEN NULL ELSE e.lease_owner END,
         lease_expires_at = CASE WHEN $3::text IN ('succeeded', 'failed') THEN NULL ELSE e.lease_expires_at END,
         updated_at = now()
    FROM prev
   WHERE e.user_id = $1 AND e.id = $2
     AND e.status = ANY ($10::text[])
     AND ($6::int IS NULL OR e.attempt = $6::int)
  RETURNING ${entryColumns("e")}, prev.status AS from_status
), ${creditedAndLogged({ credit: "$7::boolean", actor: "$8", detail: "$9" })}
SELECT moved.*, (SELECT balance_minor FROM credited) AS balance_minor FROM moved`;

const SELECT_BY_ID_SQL = `SELECT ${ENTRY_COLUMNS} FROM ledger_entries WHERE user_id = $1 AND id = $2`;

interface TransitionSpec {
  readonly to: EntryStatus;
  readonly from: readonly EntryStatus[];
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
      spec.guard.kind === "lease" ? spec.guard.attempt : null,
      spec.credit,
      spec.actor,
      spec.detail,
      spec.from,
    ]),
  );
  const row = result.rows[0];
  // A row back means this call, and no other, made the move (the guard in moved's WHERE).
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
export async function getEntryById(ref: EntryRef, db: Queryable = autocommit()): Promise<LedgerEntry | null> {
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
  attempt: number,
  options: { readonly actor?: TransitionActor; readonly db?: Queryable } = {},
): Promise<TransitionOutcome> {
  return transition(
    ref,
    {
      to: "processing",
      from: ["initiated"],
      failureReason: null,
      bankChargeId: null,
      credit: false,
      actor: options.actor ?? "request",
      guard: { kind: "lease", attempt },
      detail: null,
    },
    options.db ?? autocommit(),
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
  db: Queryable = autocommit(),
): Promise<TransitionOutcome> {
  return transition(
    ref,
    {
      to: "succeeded",
      from: ["initiated", "processing"],
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
  db: Queryable = autocommit(),
): Promise<TransitionOutcome> {
  return transition(
    ref,
    {
      to: "failed",
      from: ["initiated", "processing"],
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
  db: Queryable = autocommit(),
): Promise<LedgerEntry | null> {
  const result = await db.query(
    prepared("ledger_attach_charge", ATTACH_CHARGE_SQL, [ref.userId, ref.entryId, bankChargeId]),
  );
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}

// The charge id and the row's first response in one statement (one commit instead of two): only while the row is
// still in the status the response was built from, has no charge id and no stored response. The body's time slot
// ($6) is written as the row's new updated_at, as Date.prototype.toISOString writes it (timestamptz(3)).
// $1 user_id, $2 entry id, $3 bank charge id, $4 response status, $5 response body, $6 time slot, $7 expected status.
const ATTACH_CHARGE_AND_RESPOND_SQL = `
UPDATE ledger_entries
   SET bank_charge_id = $3, updated_at = now(), response_status = $4,
       response_body = replace($5, $6, to_char(now()::timestamptz(3) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
 WHERE user_id = $1 AND id = $2 AND status = $7 AND bank_charge_id IS NULL AND response_status IS NULL
RETURNING ${ENTRY_COLUMNS}`;

/**
 * {@link attachCharge} and {@link storeResponse} in one statement, for the request that learns a pending charge's
 * id and answers at once (contract sections 2 and 3). `response` is the row's first response as it will be after
 * the write: built from a row in status `status`, its `updatedAt` left as `timeSlot` (RESPONSE_TIME_SLOT) for the
 * statement to write the row's new time. Moves nothing unless the row is still in `status`, with no charge id and
 * no stored response. Returns the updated row (its response stored), or null when that guard did not hold: then
 * nothing was written, and the caller takes the two separate steps. Throws database errors.
 */
export async function attachChargeAndRespond(
  ref: EntryRef,
  bankChargeId: string,
  first: { readonly status: EntryStatus; readonly response: StoredResponse; readonly timeSlot: string },
  db: Queryable = autocommit(),
): Promise<LedgerEntry | null> {
  const result = await db.query(
    prepared("ledger_attach_charge_and_respond", ATTACH_CHARGE_AND_RESPOND_SQL, [
      ref.userId,
      ref.entryId,
      bankChargeId,
      first.response.status,
      first.response.body,
      first.timeSlot,
      first.status,
    ]),
  );
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}

const STORE_RESPONSE_SQL = `
UPDATE ledger_entries SET response_status = $3, response_body = $4
 WHERE user_id = $1 AND id = $2 AND response_status IS NULL
RETURNING response_status, response_body`;

/**
 * Stores the first response of an operation: the first writer wins (`WHERE response_status IS NULL`,
 * contract section 3). Returns the response now stored for the row: `response` if this call stored it,
 * otherwise the one stored earlier, which the caller must send instead so every answer is identical.
 */
export async function storeResponse(
  ref: EntryRef,
  response: StoredResponse,
  db: Queryable = autocommit(),
): Promise<{ stored: boolean; response: StoredResponse }> {
  const result = await db.query(
    prepared("ledger_store_response", STORE_RESPONSE_SQL, [ref.userId, ref.entryId, response.status, response.body]),
  );
  if (result.rows[0]) return { stored: true, response };
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
 * Runs on the plain pool by default, not `autocommit()`: a count is not safe to run twice after a lost connection.
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

/** What a signed success reports about a top-up's charge (contract section 5): its id, amount and currency. */
export interface ReportedCharge {
  readonly chargeId: string;
  readonly amountMinor: number;
  /** ISO 4217. */
  readonly currency: string;
}

/** Parameters $1-$8 belong to {@link creditMatchingTopup}'s own statement; an {@link AlsoWrite}'s start here. */
export const ALSO_FIRST_PARAM = 9;

/**
 * One more write that commits with the credit or not at all: a CTE body (`INSERT … SELECT … FROM moved`, reading
 * the `moved` CTE, which holds a row only when the credit happened) whose parameters are numbered from
 * {@link ALSO_FIRST_PARAM}. `name` names the prepared statement (one per distinct `sql`).
 */
export interface AlsoWrite {
  readonly name: string;
  readonly sql: string;
  readonly values: readonly unknown[];
}

// Same shape as TRANSITION_SQL, with the row named by its key and the guard widened to the charge: the row must be
// an unfinished top-up (status guard only: the bank's word, contract section 2) of the same amount and currency
// whose recorded charge id, if any, is this one. $1 user_id, $2 type (always 'topup'), $3 ref_id, $4 charge id,
// $5 amount, $6 currency, $7 actor, $8 audit detail. `prev` finds and locks the row by its key; `moved` names it by
// (user_id, the id `prev` found) through a scalar subquery, which the plan reads once as a parameter of its index
// condition (a join to `prev` would not be one, case C25: see TRANSITION_SQL). The type is a parameter, as in the
// claim's lookup by key, so no index that leads with a constant type can serve it (docs/decisions/045). Exported for
// the tests that break a guard in a copy of it (negative controls).
export const creditMatchingTopupSql = (also: string): string => `
WITH prev AS (
  SELECT id, status FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id = $3 FOR UPDATE
), moved AS (
  UPDATE ledger_entries e
     SET status = 'succeeded',
         failure_reason = NULL,
         bank_charge_id = $4,
         lease_owner = NULL,
         lease_expires_at = NULL,
         updated_at = now()
    FROM prev
   WHERE e.user_id = $1 AND e.id = (SELECT id FROM prev)
     AND e.status IN ('initiated', 'processing')
     AND e.amount_minor = $5::bigint AND e.currency = $6::text
     AND (e.bank_charge_id IS NULL OR e.bank_charge_id = $4)
  RETURNING ${entryColumns("e")}, prev.status AS from_status
), ${creditedAndLogged({ credit: "true", actor: "$7", detail: "$8" })}, also AS (${also})
SELECT moved.*, (SELECT balance_minor FROM credited) AS balance_minor FROM moved`;

/**
 * The common case of a charge's success in one statement: the unfinished top-up `(userId, "topup", refId)` whose
 * amount and currency are the charge's, and which records no other charge id, moves to `succeeded` with the charge id
 * and its credit, its audit row, and `also` (e.g. the webhook's record of the event, case C19), all in one commit.
 * The same move {@link completeEntry} makes with a status-only guard once a caller has read the row and matched the
 * charge against it (lib/topups/settle-topup.ts), without the read and the transaction around it.
 *
 * Returns `moved` (the row, the new balance) or `null` when nothing was written: no such row, a terminal row, or
 * a charge that disagrees with it. Then the caller judges the row the long way, which handles every one of those.
 * Throws database errors (nothing was written).
 */
export async function creditMatchingTopup(
  key: { readonly userId: string; readonly refId: string },
  charge: ReportedCharge,
  options: { readonly actor: TransitionActor; readonly detail: string; readonly also: AlsoWrite },
  db: Queryable = autocommit(),
): Promise<Extract<TransitionOutcome, { kind: "moved" }> | null> {
  const { also } = options;
  const result = await db.query(
    prepared(`ledger_credit_matching_topup_${also.name}`, creditMatchingTopupSql(also.sql), [
      key.userId,
      "topup",
      key.refId,
      charge.chargeId,
      charge.amountMinor,
      charge.currency,
      options.actor,
      options.detail,
      ...also.values,
    ]),
  );
  const row = result.rows[0];
  if (!row) return null;
  return {
    kind: "moved",
    entry: toLedgerEntry(row),
    fromStatus: row.from_status as EntryStatus,
    balanceMinor: row.balance_minor as number,
  };
}
