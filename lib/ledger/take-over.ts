/**
 * The reconciler's take-over of an unfinished row whose lease expired (contract section 2: "a row whose lease
 * expired is taken over by the reconciler"). One statement raises the fencing token, so the previous lease
 * holder, if it is still alive somewhere, can no longer move the row (its lease-guarded transitions carry the old
 * `attempt`: the fencing check in transitions.ts), and records the take-over in the audit table. The reconciler
 * (lib/reconciler) decides what to do with the row it took over.
 */
import { pool } from "../db";
import { entryColumns, toLedgerEntry, type LedgerEntry } from "./entry";
import type { Queryable } from "./queryable";

/** A row this reconciler now owns, with how old it is by the database's clock. */
export interface TakenOverEntry {
  /** The row after the take-over: `attempt` raised by one, `lease_owner` = the taker, lease renewed. */
  readonly entry: LedgerEntry;
  /** Lease owner before the take-over (null when the row had none). */
  readonly previousOwner: string | null;
  /** `now() - created_at` in milliseconds, by the database's clock (the re-drive window is measured on it). */
  readonly ageMs: number;
}

export interface TakeOverRequest {
  /** Lease owner to record, e.g. WORKER_ID. */
  readonly workerId: string;
  /** New lease length in milliseconds (LEASE_MS). */
  readonly leaseMs: number;
  /** Restrict to these users' rows (an admin reconciling one user, or a test); null = every user. */
  readonly userIds: readonly string[] | null;
}

// picked: the oldest expired unfinished row nobody else is taking over right now. The WHERE matches the partial
// index ledger_entries_unfinished_idx (status IN ('initiated','processing'), ordered by lease_expires_at), so the
// scan touches unfinished rows only. SKIP LOCKED: a second reconciler running at the same moment moves on to the
// next row instead of queueing behind this one.
// taken: the take-over itself. Its WHERE repeats the guard on the locked row version: at READ COMMITTED a row
// that another reconciler took over (and committed) between our snapshot and our lock is re-checked on its new
// version, whose lease is no longer expired, so it is not taken twice. Exactly one taker gets the row back.
// logged: the take-over is written to the audit table as a same-status entry (from = to) with the previous owner,
// so the admin timeline shows who worked on the row and when the fencing token changed.
// $1 worker id, $2 lease ms, $3 user ids or null.
const TAKE_OVER_SQL = `
WITH picked AS (
  SELECT user_id, id, lease_owner AS previous_owner
    FROM ledger_entries
   WHERE status IN ('initiated', 'processing')
     AND lease_expires_at < now()
     AND ($3::text[] IS NULL OR user_id = ANY ($3::text[]))
   ORDER BY lease_expires_at
   LIMIT 1
   FOR UPDATE SKIP LOCKED
), taken AS (
  UPDATE ledger_entries e
     SET attempt = e.attempt + 1,
         lease_owner = $1,
         lease_expires_at = now() + $2::int * interval '1 millisecond'
    FROM picked
   WHERE e.user_id = picked.user_id AND e.id = picked.id
     AND e.status IN ('initiated', 'processing')
     AND e.lease_expires_at < now()
  RETURNING ${entryColumns("e")}, picked.previous_owner
), logged AS (
  INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, detail)
  SELECT user_id, id, status, status, 'reconciler', attempt,
         format('lease taken over from %s', COALESCE(previous_owner, 'nobody'))
    FROM taken
)
SELECT taken.*, (EXTRACT(EPOCH FROM (now() - taken.created_at)) * 1000)::float8 AS age_ms FROM taken`;

/**
 * Takes over one unfinished row (`initiated` or `processing`) whose lease has expired, oldest expiry first.
 *
 * Returns the row now owned by `request.workerId` (fencing token raised, lease renewed for `request.leaseMs`),
 * or null when no such row is left (or every remaining one is being taken over by another reconciler right now).
 * Two reconcilers calling this at once never get the same row. Throws database errors as they come.
 */
export async function takeOverExpiredEntry(
  request: TakeOverRequest,
  db: Queryable = pool(),
): Promise<TakenOverEntry | null> {
  const result = await db.query(TAKE_OVER_SQL, [request.workerId, request.leaseMs, request.userIds]);
  const row = result.rows[0];
  if (!row) return null;
  return {
    entry: toLedgerEntry(row),
    previousOwner: (row.previous_owner as string | null) ?? null,
    ageMs: Number(row.age_ms),
  };
}

const COUNT_EXPIRED_SQL = `
SELECT count(*)::int AS n FROM ledger_entries
 WHERE status IN ('initiated', 'processing')
   AND lease_expires_at < now()
   AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))`;

/**
 * Counts unfinished rows whose lease has expired (what a pass leaves behind when the bank is unreachable;
 * contract section 7.5). `userIds` null = every user. Throws database errors.
 */
export async function countExpiredUnfinishedEntries(
  userIds: readonly string[] | null,
  db: Queryable = pool(),
): Promise<number> {
  const result = await db.query<{ n: number }>(COUNT_EXPIRED_SQL, [userIds]);
  return result.rows[0]?.n ?? 0;
}
