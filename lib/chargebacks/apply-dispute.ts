/**
 * Chargebacks (contract section 12): a dispute the bank has lost debits the wallet once, through a `chargeback`
 * entry keyed `(user_id, "chargeback", <dispute id>)`; a dispute reversed in the user's favour (the bank reports it
 * `won` with `lostAt` set) credits it back once, through `(user_id, "chargeback_reversal", <dispute id>)`. The
 * webhook and the reconciler both call {@link applyBankDispute} with the dispute **as the bank reports it**
 * (`GET /disputes/{id}` or the bank's listing), never with an event's claim; the claim decides who lands each entry.
 *
 * What the balance cannot cover becomes debt (`wallets.debt_minor`), never a negative balance: the chargeback's
 * debit and its entry's final state commit together, and every later credit repays the debt first
 * (lib/ledger `landBankEntry`, and the ledger's one credit, prisma/functions/ledger_credit_wallet.sql).
 *
 * Every dispute, whatever its state, is also noted on the entry that credited its charge (`dispute_status`: open,
 * lost, won; lib/ledger `noteDisputeStatus`), under that row's lock and before any money moves, so a refund's claim,
 * which takes the same lock first (lib/ledger/refunds.ts), never reserves money that a dispute returns to the card
 * (contract section 11, case C26).
 */
import { parseMerchantRef } from "../bank/merchant-ref";
import type { BankDispute } from "../bank/disputes";
import { pool, withTransaction } from "../db";
import {
  findEntryByKey,
  isValidRefId,
  landBankEntry,
  noteDisputeStatus,
  operationKey,
  runClaimedOperation,
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

/** True when the bank reports the dispute lost now or earlier (a reversal keeps `lostAt`). */
export function disputeWasLost(dispute: Pick<BankDispute, "status" | "lostAt">): boolean {
  return dispute.status === "lost" || (dispute.status === "won" && dispute.lostAt !== null);
}

/** True when the bank reports a dispute it had lost as won since: the chargeback is reversed. */
export function disputeWasReversed(dispute: Pick<BankDispute, "status" | "lostAt">): boolean {
  return dispute.status === "won" && dispute.lostAt !== null;
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
 * Claims one entry of the dispute and moves its money in the same call (lib/ledger `landBankEntry`), through the
 * claim runner on the dispute's transaction `db`: a chargeback debits (into debt where the balance is short), a
 * reversal credits (repaying debt first). Returns the entry and whether this call landed it, or a description when an
 * entry under the key has other parameters (nothing moved).
 */
async function landEntry(
  db: Queryable,
  key: OperationKey,
  dispute: BankDispute,
  door: DisputeDoor,
): Promise<{ result: "landed" | "already"; entry: LedgerEntry } | string> {
  const params = { amount: dispute.amount, currency: dispute.currency, chargeId: dispute.chargeId };
  const run = await runClaimedOperation<LedgerEntry>({
    key,
    params,
    replayCopy: "none",
    // Born succeeded, and storing no response: a loser reads the winner's row once.
    waitMs: 0,
    db,
    attempt: async () => {
      const landed = await landBankEntry(db, {
        key,
        amountMinor: dispute.amount,
        currency: dispute.currency,
        params,
        actor: door.actor,
        detail: door.detail,
      });
      // No row back: another caller's claim committed first (this one waited on it); the runner reads it.
      return landed ? { kind: "decided", response: null, detail: landed } : { kind: "lost" };
    },
  });
  if (run.kind === "won") return { result: "landed", entry: run.detail };
  return run.outcome.kind === "mismatch"
    ? `${key.type} ${key.refId}: an entry under this dispute id records another amount or charge`
    : { result: "already", entry: run.entry };
}
