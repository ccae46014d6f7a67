/**
 * The one place that applies the bank's word to a refund row (contract section 11): the request, the webhook and the
 * reconciler each learn something about a refund and hand it here. A success makes the row final (the money left
 * the wallet at the claim, so nothing more moves); a failure gives the reservation back, once, and only on the
 * bank's own answer; a pending refund records its id and waits.
 */
import type { BankRefund } from "../bank/refunds-client";
import {
  attachCharge,
  completeEntry,
  getEntryById,
  isTerminal,
  jsonStoredResponse,
  releaseReservation,
  storeResponse,
  type LedgerEntry,
  type Queryable,
  type StoredResponse,
  type TransitionActor,
  type TransitionGuard,
} from "../ledger";
import { refundMerchantRefFor } from "./refund-ref";

/** What is known about a refund, and on whose word. */
export type RefundEvidence =
  /** The bank's own answer (POST /refunds, GET /refunds/{id}). */
  | { readonly source: "bank"; readonly refund: BankRefund }
  /** A signed `refund.succeeded`: the success path trusts the signature, as for charges (contract section 5). */
  | { readonly source: "signed_success"; readonly refundId: string; readonly amountMinor: number }
  /** The bank refused `POST /refunds` for this key (4xx): it made no refund for it. */
  | { readonly source: "bank_refused"; readonly detail: string };

export type RefundSettlement =
  | { readonly kind: "succeeded"; readonly entry: LedgerEntry }
  | { readonly kind: "released"; readonly entry: LedgerEntry }
  | { readonly kind: "pending"; readonly entry: LedgerEntry }
  | { readonly kind: "unchanged"; readonly entry: LedgerEntry }
  /** The bank's refund does not match the row (key or amount): nothing moves, an admin looks. */
  | { readonly kind: "anomaly"; readonly entry: LedgerEntry; readonly detail: string };

export interface RefundDoor {
  readonly actor: TransitionActor;
  readonly guard: TransitionGuard;
  readonly detail: string;
  readonly db?: Queryable;
}

/** The refund's JSON form (contract section 11), part of its stored first response: key order is part of it. */
export function refundView(entry: LedgerEntry) {
  return {
    refundId: entry.refId,
    topupRefId: String(entry.params.topupRefId),
    amount: entry.amountMinor,
    currency: entry.currency,
    status: entry.status,
    failureReason: entry.failureReason,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}

/** The stored first response of a refund row as it is now: 201 `{ refund }`. Pure. */
export function refundResponse(entry: LedgerEntry): StoredResponse {
  return jsonStoredResponse(201, { refund: refundView(entry) });
}

/**
 * Applies `evidence` to the refund row `entry` through `door`. Returns what happened; a terminal row never moves
 * again (`unchanged`). Throws database errors.
 */
export async function settleRefund(
  entry: LedgerEntry,
  evidence: RefundEvidence,
  door: RefundDoor,
): Promise<RefundSettlement> {
  const ref = { userId: entry.userId, entryId: entry.id };
  if (evidence.source === "bank_refused") {
    const released = await releaseReservation(
      ref,
      { actor: door.actor, detail: `${door.detail}: ${evidence.detail}` },
      door.db,
    );
    return released.kind === "released" ? released : { kind: "unchanged", entry: await currentRow(entry, door.db) };
  }
  const refundId = evidence.source === "bank" ? evidence.refund.id : evidence.refundId;
  const amountMinor = evidence.source === "bank" ? evidence.refund.amount : evidence.amountMinor;
  if (amountMinor !== entry.amountMinor)
    return {
      kind: "anomaly",
      entry,
      detail: `bank refund ${refundId} is for ${amountMinor}, the row for ${entry.amountMinor}`,
    };
  if (evidence.source === "bank" && evidence.refund.merchantRef !== refundMerchantRefFor(entry.userId, entry.refId))
    return { kind: "anomaly", entry, detail: `bank refund ${refundId} belongs to another merchant reference` };
  if (entry.bankChargeId !== null && entry.bankChargeId !== refundId)
    return { kind: "anomaly", entry, detail: `the row records bank refund ${entry.bankChargeId}, not ${refundId}` };
  if (isTerminal(entry.status)) return { kind: "unchanged", entry };

  const status = evidence.source === "bank" ? evidence.refund.status : "succeeded";
  if (status === "succeeded") {
    const moved = await completeEntry(
      ref,
      { actor: door.actor, guard: door.guard, credit: false, bankChargeId: refundId, detail: door.detail },
      door.db,
    );
    return moved.kind === "moved"
      ? { kind: "succeeded", entry: moved.entry }
      : { kind: "unchanged", entry: moved.entry };
  }
  if (status === "failed") {
    const released = await releaseReservation(
      ref,
      { actor: door.actor, detail: door.detail, bankRef: refundId },
      door.db,
    );
    return released.kind === "released" ? released : { kind: "unchanged", entry: await currentRow(entry, door.db) };
  }
  const attached = await attachCharge(ref, refundId, door.db);
  return { kind: "pending", entry: attached ?? entry };
}

/** The row as it is now (a release that found it terminal: someone else finished it). */
async function currentRow(entry: LedgerEntry, db?: Queryable): Promise<LedgerEntry> {
  return (await getEntryById({ userId: entry.userId, entryId: entry.id }, db)) ?? entry;
}

/** Stores {@link refundResponse} for a row that has none yet (first writer wins). Returns the response now stored. */
export async function storeRefundResponse(entry: LedgerEntry): Promise<StoredResponse> {
  return (await storeResponse({ userId: entry.userId, entryId: entry.id }, refundResponse(entry))).response;
}
