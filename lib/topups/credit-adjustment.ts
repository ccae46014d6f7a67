/**
 * Adjustments (contract section 5): a bank charge that succeeded for a top-up whose row had already failed is
 * credited by its own ledger entry, claimed like any other (so it lands once, whoever calls and however often), and
 * linked to the failed top-up. The top-up's status and stored response never change.
 */
import { autocommit, withTransaction } from "../db";
import { env } from "../env";
import {
  completeEntry,
  ENTRY_COLUMNS,
  findEntryByKey,
  fingerprint,
  insertClaim,
  newLeaseOwner,
  operationKey,
  type LedgerEntry,
  type OperationKey,
  type OperationParams,
  toLedgerEntry,
  type TransitionActor,
  type Queryable,
  withTransactionRetry,
} from "../ledger";

/** The succeeded charge being credited: the bank's id, and its amount (minor units) and currency (ISO 4217). */
export interface AdjustedCharge {
  readonly chargeId: string;
  readonly amountMinor: number;
  readonly currency: string;
}

export type AdjustmentOutcome =
  /** This call claimed the adjustment and credited the wallet in the same transaction. */
  | { readonly kind: "credited"; readonly adjustment: LedgerEntry }
  /** The charge's adjustment already exists: nothing moved. */
  | { readonly kind: "already_credited"; readonly adjustment: LedgerEntry }
  /** The top-up already has an adjustment for another charge, or this charge's has another amount or currency:
   * nothing moved, an admin looks. */
  | { readonly kind: "mismatch"; readonly adjustment: LedgerEntry };

/**
 * The adjustment key of a succeeded charge (contract section 5): `(user_id, "adjustment", <charge id>)`, the user
 * being the failed top-up's owner. Throws a TypeError when the bank's charge id is not a valid ref id (contract
 * section 1): such a charge is reported, never credited under another name.
 */
function adjustmentKey(topup: LedgerEntry, chargeId: string): OperationKey {
  return operationKey(topup.userId, "adjustment", chargeId);
}

const SELECT_ADJUSTMENT_OF_SQL = `SELECT ${ENTRY_COLUMNS} FROM ledger_entries WHERE user_id = $1 AND adjusts_entry_id = $2`;

/**
 * The adjustment linked to `topup` (`adjusts_entry_id`, at most one per top-up by a unique index), read in its own
 * statement on `db`; null when there is none. Throws database errors.
 */
export async function findAdjustmentOf(
  topup: Pick<LedgerEntry, "userId" | "id">,
  db: Queryable = autocommit(),
): Promise<LedgerEntry | null> {
  const result = await db.query(SELECT_ADJUSTMENT_OF_SQL, [topup.userId, topup.id]);
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}

/**
 * Credits `charge` to the owner of `topup` (a `failed` top-up row) through an `adjustment` entry keyed by the
 * charge id, exactly once per charge and at most once per top-up: one transaction first reads the top-up's linked
 * adjustment (another charge's: `mismatch`, nothing claimed), then claims the adjustment's key (INSERT ... ON CONFLICT DO NOTHING, contract section 1),
 * moves it to `succeeded` and raises the balance in the same statement. A concurrent caller blocks on the claim
 * until the winner commits, then reads the winner's row in a separate statement. Never refused for the balance
 * ceiling: the money was already taken (contract section 5).
 *
 * `door.actor` is "webhook" or "reconciler" (or "request"); `door.detail` goes on the audit transition; with
 * `door.db` the work runs in the caller's open transaction (the webhook records its event in the same commit),
 * otherwise in its own, retried after a conflict or a lost connection.
 *
 * Returns `credited`, `already_credited` or `mismatch` (the top-up is adjusted by another charge, or the existing
 * adjustment's fingerprint differs: another amount or currency). Throws database errors (a second charge for the
 * same top-up racing this one hits the link's unique index: 23505, rolled back, reported by the caller), a TypeError
 * for a charge id that is not a valid ref id, and an Error when `topup` is not a failed top-up (a caller's bug).
 */
export async function creditAdjustment(
  topup: LedgerEntry,
  charge: AdjustedCharge,
  door: { readonly actor: TransitionActor; readonly detail: string; readonly db?: Queryable },
): Promise<AdjustmentOutcome> {
  if (topup.type !== "topup" || topup.status !== "failed")
    throw new Error(`adjustment: entry ${topup.id} is a ${topup.status} ${topup.type}, not a failed top-up`);
  const key = adjustmentKey(topup, charge.chargeId);
  const params: OperationParams = { amount: charge.amountMinor, currency: charge.currency, chargeId: charge.chargeId };
  const work = async (db: Queryable): Promise<AdjustmentOutcome> => {
    const linked = await findAdjustmentOf(topup, db);
    if (linked && linked.refId !== key.refId) return { kind: "mismatch", adjustment: linked };
    const claimed = await insertClaim(db, {
      key,
      amountMinor: charge.amountMinor,
      currency: charge.currency,
      params,
      leaseOwner: newLeaseOwner(),
      leaseMs: env().LEASE_MS,
      actor: door.actor,
      adjustsEntryId: topup.id,
    });
    // No row back: another caller's claim committed first (this one waited on it). Read it in its own statement.
    if (!claimed) {
      const existing = await findEntryByKey(key, db);
      if (!existing) throw new Error(`adjustment ${key.refId} of user ${key.userId}: neither inserted nor found`);
      return existing.fingerprint === fingerprint("adjustment", params)
        ? { kind: "already_credited", adjustment: existing }
        : { kind: "mismatch", adjustment: existing };
    }
    const moved = await completeEntry(
      { userId: claimed.userId, entryId: claimed.id },
      { actor: door.actor, guard: { kind: "lease", attempt: claimed.attempt }, credit: true, detail: door.detail },
      db,
    );
    // The row was inserted by this transaction and nobody else can see it yet: the guard cannot refuse.
    if (moved.kind !== "moved")
      throw new Error(`adjustment ${key.refId}: the fresh claim's transition did not move the row`);
    return { kind: "credited", adjustment: moved.entry };
  };
  if (door.db) return work(door.db);
  return withTransactionRetry(() => withTransaction(work));
}
