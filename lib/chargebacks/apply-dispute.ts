/**
 * Chargebacks (contract section 12): a dispute the bank has lost debits the wallet once, through a `chargeback`
 * entry keyed `(user_id, "chargeback", <dispute id>)`; a dispute reversed in the user's favour (the bank reports it
 * `won` with `lostAt` set) credits it back once, through `(user_id, "chargeback_reversal", <dispute id>)`. The
 * webhook and the reconciler both call {@link applyBankDispute} with the dispute **as the bank reports it**
 * (`GET /disputes/{id}` or the bank's listing), never with an event's claim; the claim decides who lands each entry.
 *
 * What the balance cannot cover becomes debt (`wallets.debt_minor`), never a negative balance: the chargeback's
 * debit and its entry's final state commit together, and every later credit repays the debt first
 * (lib/ledger transitions, the `credited` step).
 *
 * Every dispute, whatever its state, is also noted on the entry that credited its charge (`dispute_status`: open,
 * lost, won), under that row's lock and before any money moves, so a refund's claim, which takes the same lock first
 * (lib/ledger/refunds.ts), never reserves money that a dispute returns to the card (contract section 11, case C26).
 */
import { parseMerchantRef } from "../bank/merchant-ref";
import type { BankDispute } from "../bank/disputes";
import { pool, withTransaction } from "../db";
import { env } from "../env";
import {
  completeEntry,
  type DisputeStatus,
  findEntryByKey,
  fingerprint,
  insertClaim,
  isValidRefId,
  newLeaseOwner,
  operationKey,
  prepared,
  withTransactionRetry,
  type LedgerEntry,
  type OperationKey,
  type Queryable,
  type TransitionActor,
} from "../ledger";

/** One entry a dispute asks for, and what became of it. */
export interface LandedEntry {
  readonly type: "chargeback" | "chargeback_reversal";
  /** `landed`: this call claimed it and moved the money; `already`: it existed (nothing moved). */
  readonly result: "landed" | "already";
  readonly entry: LedgerEntry;
}

export type DisputeApplication =
  /** The dispute moves no money (open, or won without ever being lost); its state is noted on the credited entry. */
  | { readonly kind: "no_move"; readonly detail: string }
  /** The entries the dispute asks for exist now: the chargeback, and its reversal when the dispute was reversed. */
  | { readonly kind: "applied"; readonly entries: readonly LandedEntry[] }
  /** Nothing moved: the dispute names no credited charge of a user here, or an entry under its id differs. */
  | { readonly kind: "anomaly"; readonly detail: string };

/** Who applies the dispute, for the audit trail of the entries (contract section 2). */
export interface DisputeDoor {
  readonly actor: TransitionActor;
  readonly detail: string;
  /** Run in the caller's open transaction (the webhook records its event in the same commit). */
  readonly db?: Queryable;
}

// A chargeback's debit: what the balance covers comes off it, the rest becomes debt; never below zero, one
// statement. A wallet that does not exist yet (a charge credited by an adjustment always has one; this is a guard)
// starts owing the whole amount. Both SET expressions read the row as it was before the update.
// $1 user id, $2 amount (minor units), $3 currency.
const CHARGEBACK_DEBIT_SQL = `
INSERT INTO wallets (user_id, balance_minor, debt_minor, currency) VALUES ($1, 0, $2, $3)
ON CONFLICT (user_id) DO UPDATE
   SET balance_minor = GREATEST(wallets.balance_minor - EXCLUDED.debt_minor, 0),
       debt_minor = wallets.debt_minor + GREATEST(EXCLUDED.debt_minor - wallets.balance_minor, 0),
       updated_at = now()
RETURNING balance_minor, debt_minor`;

/**
 * Debits `amountMinor` (minor units) from `userId`'s wallet on `db` (the chargeback's transaction): the balance
 * down to zero at most, the rest added to the debt (contract section 12: never a negative balance).
 * Returns the wallet's new balance and debt, in minor units. Throws database errors.
 */
export async function debitIntoDebt(
  db: Queryable,
  userId: string,
  amountMinor: number,
  currency: string,
): Promise<{ balanceMinor: number; debtMinor: number }> {
  const result = await db.query<{ balance_minor: number; debt_minor: number }>(
    prepared("chargeback_debit", CHARGEBACK_DEBIT_SQL, [userId, amountMinor, currency]),
  );
  const row = result.rows[0];
  if (!row) throw new Error(`chargeback debit of ${userId}: no wallet row back`);
  return { balanceMinor: row.balance_minor, debtMinor: row.debt_minor };
}

/** True when the bank reports the dispute lost now or earlier (a reversal keeps `lostAt`). */
export function disputeWasLost(dispute: Pick<BankDispute, "status" | "lostAt">): boolean {
  return dispute.status === "lost" || (dispute.status === "won" && dispute.lostAt !== null);
}

/** True when the bank reports a dispute it had lost as won since: the chargeback is reversed. */
export function disputeWasReversed(dispute: Pick<BankDispute, "status" | "lostAt">): boolean {
  return dispute.status === "won" && dispute.lostAt !== null;
}

// Notes a dispute's state on the entry that credited its charge, only forward (open < lost < won: the bank's
// disputes never move back), so a stale reading applied after a newer one changes nothing. The update takes the
// row's lock before the chargeback's debit takes the wallet's: the order of every refund statement (top-up, then
// wallet; lib/ledger/refunds.ts), so the two never deadlock. A row already at this state or past it is left alone.
// $1 user id, $2 entry id, $3 the dispute's state.
const NOTE_DISPUTE_STATUS_SQL = `
UPDATE ledger_entries SET dispute_status = $3
 WHERE user_id = $1 AND id = $2 AND type IN ('topup', 'adjustment')
   AND COALESCE(array_position(ARRAY['open', 'lost', 'won'], dispute_status), 0)
       < array_position(ARRAY['open', 'lost', 'won'], $3::text)`;

/**
 * Notes `status` (the bank's word) as the dispute state of `credited`, the entry that credited the disputed charge,
 * on `db`; only ever moves it forward (open, lost, won). Returns true when the row changed. Throws database errors.
 */
async function noteDisputeStatus(db: Queryable, credited: LedgerEntry, status: DisputeStatus): Promise<boolean> {
  const result = await db.query(
    prepared("ledger_note_dispute_status", NOTE_DISPUTE_STATUS_SQL, [credited.userId, credited.id, status]),
  );
  return (result.rowCount ?? 0) > 0;
}

/**
 * The credited charge a dispute is about, or why it is none: the user's top-up under the merchant reference, moved
 * to `succeeded` by this very charge, or the adjustment that credited the charge (contract section 5). A dispute of
 * money this wallet never received moves nothing.
 */
async function findCreditedCharge(
  dispute: BankDispute,
  userId: string,
  refId: string,
  db?: Queryable,
): Promise<LedgerEntry | string> {
  const topup = await findEntryByKey(operationKey(userId, "topup", refId), db);
  if (topup?.status === "succeeded" && topup.bankChargeId === dispute.chargeId) return topup;
  const adjustment = isValidRefId(dispute.chargeId)
    ? await findEntryByKey(operationKey(userId, "adjustment", dispute.chargeId), db)
    : null;
  if (adjustment?.status === "succeeded") return adjustment;
  return `dispute ${dispute.id}: no credited top-up or adjustment of user ${userId} has charge ${dispute.chargeId}`;
}

/**
 * Applies a dispute as the bank reports it: its state is noted on the entry that credited the charge (so refunds
 * wait while it is open or lost, case C26); when it was lost, the `chargeback` entry exists (claimed and debited
 * once); when it was then reversed, the `chargeback_reversal` entry exists too (claimed and credited once, after the
 * chargeback in the same transaction). Concurrent callers (duplicate deliveries, the reconciler) block on the claim
 * until the first commits, then find the entries: each lands exactly once (contract section 1).
 *
 * `dispute` must come from the bank (never from an event's body). The dispute's amount is debited as the bank
 * states it, at most the credited entry's amount, in its currency.
 *
 * Returns `no_move` (open, or won outright), `applied` (each entry `landed` by this call or `already` there), or
 * `anomaly` (nothing moved: the merchant reference is not a top-up's, the charge was never credited here, the
 * amount or currency does not match the credit, or an entry under the dispute id has other parameters).
 * Throws database errors (the transaction rolled back; the caller answers 500 or leaves it to the next pass).
 */
export async function applyBankDispute(dispute: BankDispute, door: DisputeDoor): Promise<DisputeApplication> {
  const noMove = { kind: "no_move", detail: `dispute ${dispute.id} is ${dispute.status}: no money moves` } as const;
  const parts = parseMerchantRef(dispute.merchantRef);
  if (!parts || !isValidRefId(dispute.id))
    return disputeWasLost(dispute)
      ? { kind: "anomaly", detail: `dispute ${dispute.id}: merchant reference or id is not a top-up's` }
      : noMove;
  const credited = await findCreditedCharge(dispute, parts.userId, parts.refId, door.db);
  if (!disputeWasLost(dispute)) {
    // An open dispute, or one won outright: nothing moves, but refunds must wait while it is open (case C26).
    if (typeof credited !== "string") await noteDisputeStatus(door.db ?? pool(), credited, dispute.status);
    return noMove;
  }
  if (typeof credited === "string") return { kind: "anomaly", detail: credited };
  if (dispute.amount > credited.amountMinor || dispute.currency !== credited.currency)
    return {
      kind: "anomaly",
      detail: `dispute ${dispute.id}: ${dispute.amount} ${dispute.currency} against a credit of ${credited.amountMinor} ${credited.currency}`,
    };
  const work = async (db: Queryable): Promise<DisputeApplication> => {
    // First, under the credited row's lock: from here on no refund of this charge can be claimed (case C26).
    await noteDisputeStatus(db, credited, dispute.status === "won" ? "won" : "lost");
    const entries: LandedEntry[] = [];
    const types = disputeWasReversed(dispute)
      ? (["chargeback", "chargeback_reversal"] as const)
      : (["chargeback"] as const);
    for (const type of types) {
      const landed = await landEntry(db, operationKey(parts.userId, type, dispute.id), dispute, door);
      if (typeof landed === "string") return { kind: "anomaly", detail: landed };
      entries.push({ type, ...landed });
    }
    return { kind: "applied", entries };
  };
  if (door.db) return work(door.db);
  return withTransactionRetry(() => withTransaction(work));
}

/**
 * Claims one entry of the dispute and moves its money in the same transaction: a chargeback debits (into debt
 * where the balance is short), a reversal credits (repaying debt first). Returns the entry and whether this call
 * landed it, or a description when an entry under the key has other parameters (nothing moved).
 */
async function landEntry(
  db: Queryable,
  key: OperationKey,
  dispute: BankDispute,
  door: DisputeDoor,
): Promise<{ result: "landed" | "already"; entry: LedgerEntry } | string> {
  const params = { amount: dispute.amount, currency: dispute.currency, chargeId: dispute.chargeId };
  const claimed = await insertClaim(db, {
    key,
    amountMinor: dispute.amount,
    currency: dispute.currency,
    params,
    leaseOwner: newLeaseOwner(),
    leaseMs: env().LEASE_MS,
    actor: door.actor,
  });
  if (!claimed) {
    // Another caller's claim committed first (this one waited on it): read it in its own statement.
    const existing = await findEntryByKey(key, db);
    if (!existing) throw new Error(`${key.type} ${key.refId} of user ${key.userId}: neither inserted nor found`);
    return existing.fingerprint === fingerprint(key.type, params)
      ? { result: "already", entry: existing }
      : `${key.type} ${key.refId}: an entry under this dispute id has other parameters`;
  }
  const isReversal = key.type === "chargeback_reversal";
  if (!isReversal) await debitIntoDebt(db, key.userId, dispute.amount, dispute.currency);
  const moved = await completeEntry(
    { userId: claimed.userId, entryId: claimed.id },
    { actor: door.actor, guard: { kind: "lease", attempt: claimed.attempt }, credit: isReversal, detail: door.detail },
    db,
  );
  // The row was inserted by this transaction and nobody else can see it yet: the guard cannot refuse.
  if (moved.kind !== "moved") throw new Error(`${key.type} ${key.refId}: fresh claim refused its transition`);
  return { result: "landed", entry: moved.entry };
}
