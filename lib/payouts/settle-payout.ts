/**
 * The one place that applies the bank's word to a payout row (contract section 14; docs/decisions/060): the request,
 * the webhook and the reconciler each learn something about a payout and hand the bank's own answer here. Paid posts
 * the held money to the bank's clearing (the row `succeeded`; ledger_move_entry's settlement); failed gives the hold
 * back, once (ledger_release_reservation); returned after paid credits the amount back once, as the payout's own
 * `payout_return` entry; pending records the bank's payout id and waits. Nothing here runs on a timer or on an event's
 * word: every evidence is the bank's answer to a request (POST, GET by id or reference, the listing).
 */
import type { BankPayout } from "../bank/payouts-client";
import { payoutMerchantRefFor } from "../bank/merchant-ref";
import { pool } from "../db";
import {
  attachCharge,
  completeEntry,
  getEntryById,
  isTerminal,
  jsonResponseTemplate,
  jsonStoredResponse,
  landBankEntry,
  operationKey,
  payoutView,
  releaseReservation,
  storeResponse,
  type LedgerEntry,
  type Queryable,
  type ResponseTemplate,
  type StoredResponse,
  type TransitionActor,
  type TransitionGuard,
} from "../ledger";

/** What is known about a payout: always on the bank's word. */
export type PayoutEvidence =
  /** The bank's payout for the row's key (POST /payouts, GET /payouts/{id} or by reference, the listing). */
  | { readonly source: "bank"; readonly payout: BankPayout }
  /** The bank refused `POST /payouts` for this key (4xx): it made no payout for it, and never will. */
  | { readonly source: "bank_refused"; readonly detail: string };

export type PayoutSettlement =
  | { readonly kind: "paid" | "released" | "returned" | "pending" | "unchanged"; readonly entry: LedgerEntry }
  /** The bank's payout does not match the row, or contradicts what the ledger already did: nothing moves. */
  | { readonly kind: "anomaly"; readonly entry: LedgerEntry; readonly detail: string };

export interface PayoutDoor {
  readonly actor: TransitionActor;
  readonly guard: TransitionGuard;
  readonly detail: string;
  readonly db?: Queryable;
}

/** The stored first response of a payout row as it is now: 201 `{ payout }` (contract section 14). Pure. */
export function payoutResponse(entry: LedgerEntry): StoredResponse {
  return jsonStoredResponse(201, { payout: payoutView(entry) });
}

/**
 * {@link payoutResponse} of `entry` as it will be once a pending payout's id is attached, its `updatedAt` the
 * template's slot for the statement that attaches it (lib/ledger `attachChargeAndRespond`).
 */
export function payoutResponseTemplate(entry: LedgerEntry): ResponseTemplate {
  const view = payoutView(entry);
  return jsonResponseTemplate(201, (slot) => ({ payout: { ...view, updatedAt: slot } }));
}

/** Stores {@link payoutResponse} for a row that has none yet (first writer wins). Returns the response now stored. */
export async function storePayoutResponse(entry: LedgerEntry): Promise<StoredResponse> {
  return (await storeResponse({ userId: entry.userId, entryId: entry.id }, payoutResponse(entry))).response;
}

/**
 * Applies `evidence` to the payout row `entry` through `door`. Returns what happened: a terminal row never moves
 * again (`unchanged`), a return lands once however often it is reported. A bank payout for another key, amount or
 * destination, one the bank paid while the ledger gave the hold back, or one the bank failed while the ledger posted
 * it, is an `anomaly` (nothing moves; the caller reports it). Throws database errors.
 */
export async function settlePayout(
  entry: LedgerEntry,
  evidence: PayoutEvidence,
  door: PayoutDoor,
): Promise<PayoutSettlement> {
  const ref = { userId: entry.userId, entryId: entry.id };
  if (evidence.source === "bank_refused") {
    const released = await releaseReservation(
      ref,
      { actor: door.actor, detail: `${door.detail}: ${evidence.detail}` },
      door.db,
    );
    return released.kind === "released" ? released : { kind: "unchanged", entry: await currentRow(entry, door.db) };
  }
  const { payout } = evidence;
  const mismatch = mismatchOf(entry, payout);
  if (mismatch) return { kind: "anomaly", entry, detail: mismatch };
  if (payout.status === "pending") {
    if (isTerminal(entry.status)) return { kind: "unchanged", entry };
    return { kind: "pending", entry: (await attachCharge(ref, payout.id, door.db)) ?? entry };
  }
  if (payout.status === "failed") {
    if (entry.status === "succeeded")
      return { kind: "anomaly", entry, detail: `bank payout ${payout.id} failed, but the ledger posted it as paid` };
    const released = await releaseReservation(
      ref,
      { actor: door.actor, detail: door.detail, bankRef: payout.id },
      door.db,
    );
    return released.kind === "released" ? released : { kind: "unchanged", entry: await currentRow(entry, door.db) };
  }
  // Paid, or returned (which the bank only does after paying).
  let current = entry;
  let paidNow = false;
  if (current.status === "failed")
    return { kind: "anomaly", entry, detail: `bank payout ${payout.id} was paid, but the ledger gave the hold back` };
  if (current.status !== "succeeded") {
    const moved = await completeEntry(
      ref,
      { actor: door.actor, guard: door.guard, credit: false, bankChargeId: payout.id, detail: door.detail },
      door.db,
    );
    current = moved.entry;
    paidNow = moved.kind === "moved";
    if (current.status !== "succeeded") return { kind: "unchanged", entry: current };
  }
  if (payout.status === "returned" && (await landReturn(current, payout, door)))
    return { kind: "returned", entry: current };
  return { kind: paidNow ? "paid" : "unchanged", entry: current };
}

/** Why `payout` cannot be the row's payout, or null when it can. */
function mismatchOf(entry: LedgerEntry, payout: BankPayout): string | null {
  if (payout.merchantRef !== payoutMerchantRefFor(entry.userId, entry.refId))
    return `bank payout ${payout.id} belongs to another merchant reference`;
  if (payout.amount !== entry.amountMinor || payout.currency !== entry.currency)
    return `bank payout ${payout.id} is for ${payout.amount} ${payout.currency}, the row for ${entry.amountMinor} ${entry.currency}`;
  if (payout.destination !== entry.params.destination)
    return `bank payout ${payout.id} pays another account than the row's`;
  if (entry.bankChargeId !== null && entry.bankChargeId !== payout.id)
    return `the row records bank payout ${entry.bankChargeId}, not ${payout.id}`;
  return null;
}

/**
 * The return of a paid payout credited once: the `payout_return` entry keyed by the payout's own ref id (a payout is
 * returned at most once, whatever return id the bank reports), born succeeded with its credit (ledger_land_bank_entry).
 * Returns true when this call landed it.
 */
async function landReturn(paid: LedgerEntry, payout: BankPayout, door: PayoutDoor): Promise<boolean> {
  const landed = await landBankEntry(door.db ?? pool(), {
    key: operationKey(paid.userId, "payout_return", paid.refId),
    amountMinor: paid.amountMinor,
    currency: paid.currency,
    params: { amount: paid.amountMinor, currency: paid.currency, payoutId: payout.id },
    actor: door.actor,
    detail: `${door.detail}: returned by the bank (${payout.returnReason ?? "no reason given"}, ${payout.returnId ?? "no return id"})`,
  });
  return landed !== null;
}

/** The row as it is now (a move that found it terminal: someone else finished it). */
async function currentRow(entry: LedgerEntry, db?: Queryable): Promise<LedgerEntry> {
  return (await getEntryById({ userId: entry.userId, entryId: entry.id }, db)) ?? entry;
}
