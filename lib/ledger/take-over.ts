/**
 * The reconciler's take-over of an unfinished row whose lease expired (contract section 2: "a row whose lease
 * expired is taken over by the reconciler"): the database function ledger_take_over_entry raises the fencing token,
 * so the previous lease holder, if it is still alive somewhere, can no longer move the row (ledger_move_entry compares
 * it), and appends the take-over to the audit table. The reconciler (lib/reconciler) decides what to do with the row
 * it took over.
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

// One call of ledger_take_over_entry (prisma/functions/ledger_take_over_entry.sql: the pick with SKIP LOCKED, the
// fencing token raised, the lease renewed and the audit row), arguments by name; the row's columns spelled out for
// toLedgerEntry.
const TAKE_OVER_SQL = `
SELECT ${entryColumns("(t.entry)")}, t.previous_owner, t.age_ms
  FROM ledger_take_over_entry(p_worker_id => $1, p_lease_ms => $2::int, p_user_ids => $3::text[]) AS t`;

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
