/**
 * Adjustments (contract section 5): a bank charge that succeeded for a top-up whose row had already failed is
 * credited by its own ledger entry, claimed like any other (so it lands once, whoever calls and however often), and
 * linked to the failed top-up. The top-up's status and stored response never change.
 */
import { retryingPool, withTransaction } from "../db";
import { env } from "../env";
import {
  completeEntry,
  ENTRY_COLUMNS,
  insertClaimOrLose,
  movedOrThrow,
  operationKey,
  runClaimedOperation,
  toLedgerEntry,
  type ClaimAttempt,
  type ClaimRequest,
  type LedgerEntry,
  type OperationKey,
  type OperationParams,
  type Queryable,
  type TransitionActor,
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
  db: Queryable = retryingPool(),
): Promise<LedgerEntry | null> {
  const result = await db.query(SELECT_ADJUSTMENT_OF_SQL, [topup.userId, topup.id]);
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}

/** Who credits an adjustment, for the audit trail (contract section 2), and where. */
export interface AdjustmentDoor {
  /** "webhook" or "reconciler" (or "request"). */
  readonly actor: TransitionActor;
  /** Goes on the adjustment's audit transition. */
  readonly detail: string;
  /** Run in the caller's open transaction (the webhook records its event in the same commit). */
  readonly db?: Queryable;
}

/**
 * Credits `charge` to the owner of `topup` (a `failed` top-up row) through an `adjustment` entry keyed by the
 * charge id, exactly once per charge and at most once per top-up, through the claim runner (lib/ledger
 * `runClaimedOperation`): one transaction first reads the top-up's linked adjustment (another charge's: `mismatch`,
 * nothing claimed), then claims the adjustment's key (INSERT ... ON CONFLICT DO NOTHING, contract section 1), moves
 * it to `succeeded` and raises the balance in the same statement. A concurrent caller blocks on the claim until the
 * winner commits, then reads the winner's row in a separate statement. Never refused for the balance ceiling: the
 * money was already taken (contract section 5).
 *
 * With `door.db` the work runs in the caller's open transaction, otherwise in its own, retried after a conflict or a
 * lost connection.
 *
 * Returns `credited`, `already_credited` or `mismatch` (the top-up is adjusted by another charge, or the existing
 * adjustment's fingerprint differs: another amount or currency). Throws database errors (a second charge for the
 * same top-up racing this one hits the link's unique index: 23505, rolled back, reported by the caller), a TypeError
 * for a charge id that is not a valid ref id, and an Error when `topup` is not a failed top-up (a caller's bug).
 */
export async function creditAdjustment(
  topup: LedgerEntry,
  charge: AdjustedCharge,
  door: AdjustmentDoor,
): Promise<AdjustmentOutcome> {
  if (topup.type !== "topup" || topup.status !== "failed")
    throw new Error(`adjustment: entry ${topup.id} is a ${topup.status} ${topup.type}, not a failed top-up`);
  const key = adjustmentKey(topup, charge.chargeId);
  const params: OperationParams = { amount: charge.amountMinor, currency: charge.currency, chargeId: charge.chargeId };
  const run = await runClaimedOperation<LedgerEntry, LedgerEntry>({
    key,
    params,
    replayCopy: "none",
    // Born succeeded, and storing no response: a loser reads the winner's row once.
    waitMs: 0,
    db: door.db,
    attempt: ({ leaseOwner }) => {
      const request: ClaimRequest = {
        key,
        amountMinor: charge.amountMinor,
        currency: charge.currency,
        params,
        leaseOwner,
        leaseMs: env().LEASE_MS,
        actor: door.actor,
        adjustsEntryId: topup.id,
      };
      return door.db
        ? claimAdjustment(door.db, topup, request, door.detail)
        : withTransaction((tx) => claimAdjustment(tx, topup, request, door.detail));
    },
  });
  switch (run.kind) {
    case "won":
      return { kind: "credited", adjustment: run.detail };
    case "abandoned":
      return { kind: "mismatch", adjustment: run.detail };
    case "existing":
      return run.outcome.kind === "mismatch"
        ? { kind: "mismatch", adjustment: run.entry }
        : { kind: "already_credited", adjustment: run.entry };
  }
}

/**
 * One attempt of an adjustment on `db`, a transaction: the top-up's linked adjustment under another key (abandoned
 * with it, nothing claimed), else the claim of `request.key` and its move to `succeeded` with the credit, the audit
 * transition carrying `detail`. `lost` when the key already had a row. Throws database errors.
 */
async function claimAdjustment(
  db: Queryable,
  topup: LedgerEntry,
  request: ClaimRequest,
  detail: string,
): Promise<ClaimAttempt<LedgerEntry, LedgerEntry>> {
  const linked = await findAdjustmentOf(topup, db);
  if (linked && linked.refId !== request.key.refId) return { kind: "abandoned", detail: linked };
  const claimed = await insertClaimOrLose(db, request);
  // No row back: another caller's claim committed first (this one waited on it); the runner reads it.
  if (!claimed) return { kind: "lost" };
  const ref = { userId: claimed.userId, entryId: claimed.id };
  const guard = { kind: "lease", fencingToken: claimed.fencingToken } as const;
  const moved = await completeEntry(ref, { actor: request.actor, guard, credit: true, detail }, db);
  return { kind: "decided", response: null, detail: movedOrThrow(moved, `adjustment ${request.key.refId}`) };
}
