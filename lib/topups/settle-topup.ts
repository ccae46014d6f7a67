/**
 * The one place that applies the bank's word to a top-up row (contract section 5). The
 * request (lib/topups/create-topup.ts), the webhook (lib/webhooks/handle-bank-webhook.ts) and the reconciler
 * (lib/reconciler/reconcile-once.ts) each learn something about a charge and hand it here; this decides, once and
 * for all three, whether the row is credited, failed, left pending, or reported as an anomaly.
 *
 * What counts as evidence is part of the type ({@link ChargeEvidence}): the bank's own answers, a signed
 * `charge.succeeded`, or the bank's confirmation that a key can never be charged. A `charge.failed` event is not
 * evidence: its type and arrival order are claims (case C14), so the webhook asks the bank and brings its answer.
 * Transitions go through lib/ledger's guarded statements, so a row moves to a terminal state once, whoever calls.
 * One shortcut exists, for the commonest case only: the webhook credits a signed success that matches an unfinished
 * row in one statement (lib/ledger `creditMatchingTopup`, docs/decisions/045), the same move this function makes for
 * that evidence, guarded by the same checks in SQL; whatever it does not match comes here.
 */
import type { BankCharge } from "../bank/client";
import { merchantRefFor } from "../bank/merchant-ref";
import { env } from "../env";
import { log } from "../log";
import { refundMerchantRefFor } from "../refunds/refund-ref";
import {
  attachCharge,
  attachChargeAndRespond,
  completeEntry,
  failEntry,
  isTerminal,
  recordSettleFailure,
  type EntryRef,
  type FailureReason,
  type LedgerEntry,
  type TransitionActor,
  type TransitionGuard,
  type Queryable,
  type ResponseTemplate,
  type StoredResponse,
  classifyDbError,
} from "../ledger";
import { creditAdjustment, type AdjustedCharge } from "./credit-adjustment";

/** What is known about the charge of a top-up's merchant reference, and on whose word. */
export type ChargeEvidence =
  /** The bank's own answer to a call the app made (POST or GET /charges, the charge list, a cancel that found one). */
  | { readonly source: "bank"; readonly charge: BankCharge }
  /**
   * A `charge.succeeded` event whose signature verified. The success path trusts the signature (contract
   * section 5); there is deliberately no such variant for `charge.failed`.
   */
  | {
      readonly source: "signed_success";
      readonly chargeId: string;
      readonly amountMinor: number;
      readonly currency: string;
    }
  /** The bank confirmed that no charge exists for the key and none ever will (cancelled, or 409 on a re-send). */
  | { readonly source: "key_cancelled" };

/** Who is settling, with which guard (contract section 2), and what the audit row says. */
export interface SettleDoor {
  readonly actor: Extract<TransitionActor, "request" | "webhook" | "reconciler">;
  /** A lease holder's fencing token (the request), or status-only (the bank's word: webhook, reconciler). */
  readonly guard: TransitionGuard;
  /** Audit detail of the transition, e.g. "webhook: event evt_…". */
  readonly detail: string;
  /**
   * Run the transition on this connection (a transaction of the caller's, e.g. the webhook recording its event in
   * the same commit). When given, a failure is not recorded here: the caller's transaction is aborted, and the
   * caller records it with {@link noteSettleFailure} after rolling back.
   */
  readonly db?: Queryable;
  /**
   * The request's first response for a row the charge leaves pending, built from the row before the charge id is
   * recorded, its `updatedAt` the template's slot (./topup-response.ts `topupResponseOnWrite`): stored in
   * the statement that records the charge id (lib/ledger `attachChargeAndRespond`, one commit instead of two). Only
   * the request sets it; the `pending` outcome then carries the response when this call stored it.
   */
  readonly pendingResponse?: (entry: LedgerEntry) => ResponseTemplate;
}

/** Why a row and its charge cannot be settled by the app alone: nothing moves, an admin looks. */
export const SETTLEMENT_ANOMALY_KINDS = [
  /** The charge's amount differs from the row's. */
  "amount_mismatch",
  /** The charge's currency differs from the row's. */
  "currency_mismatch",
  /** The row already records another charge id than the one reported. */
  "charge_mismatch",
  /**
   * A signed `charge.succeeded` for a row that has already failed: an adjustment credits money only on the bank's
   * own answer, so nothing moves on the event's word (the webhook asks the bank first; the reconciler reads it).
   */
  "success_for_failed_row",
  /**
   * The bank says the charge succeeded for a row that has already failed, and the row's adjustment already exists
   * for another charge, amount or currency: nothing more is credited.
   */
  "adjustment_mismatch",
  /** The bank says declined, but the row was credited. */
  "decline_for_succeeded_row",
  /** The bank has no charge for the key (and cancelled it), but the row was credited. */
  "no_charge_for_succeeded_row",
] as const;
export type SettlementAnomalyKind = (typeof SETTLEMENT_ANOMALY_KINDS)[number];

/** An anomaly names the merchant reference and the charge id it is about (contract section 5, case C19). */
export interface SettlementAnomaly {
  readonly kind: SettlementAnomalyKind;
  readonly merchantRef: string | null;
  readonly chargeId: string | null;
  /** One sentence for the admin page and the logs. */
  readonly detail: string;
}

export type SettlementOutcome =
  /** This call moved the row to `succeeded` and credited the wallet in the same statement. */
  | { readonly kind: "credited"; readonly entry: LedgerEntry }
  /** This call moved the row to `failed`. */
  | { readonly kind: "failed"; readonly entry: LedgerEntry }
  /**
   * The charge succeeded but the row had already failed: this call credited it through an `adjustment` entry linked
   * to the row (contract section 5). `entry` is the top-up, unchanged.
   */
  | { readonly kind: "adjusted"; readonly entry: LedgerEntry; readonly adjustment: LedgerEntry }
  /**
   * The charge is pending at the bank: the row stays unfinished (its charge id recorded). `responded`: the first
   * response this call stored with the charge id (only when the door asked for it, {@link SettleDoor.pendingResponse}).
   */
  | { readonly kind: "pending"; readonly entry: LedgerEntry; readonly responded?: StoredResponse }
  /**
   * Nothing to do: the row already is what the evidence says (`already_succeeded`, `already_failed`), or this
   * lease holder was fenced out by a take-over (`fenced`: the new owner settles it).
   */
  | {
      readonly kind: "unchanged";
      readonly entry: LedgerEntry;
      readonly why: "already_succeeded" | "already_failed" | "already_adjusted" | "fenced";
    }
  /** The row and the evidence disagree: nothing moved. */
  | { readonly kind: "anomaly"; readonly entry: LedgerEntry; readonly anomaly: SettlementAnomaly };

function refOf(entry: LedgerEntry): EntryRef {
  return { userId: entry.userId, entryId: entry.id };
}

/**
 * The row's merchant reference at the bank (a refund's `refund:<userId>:<refundId>`, a top-up's `topup:...`), or null
 * when its key cannot be one (then it never reached the bank) or the type never goes to the bank.
 */
export function merchantRefOf(entry: LedgerEntry): string | null {
  try {
    if (entry.type === "refund") return refundMerchantRefFor(entry.userId, entry.refId);
    return entry.type === "topup" ? merchantRefFor(entry.userId, entry.refId) : null;
  } catch {
    return null;
  }
}

function anomaly(
  entry: LedgerEntry,
  kind: SettlementAnomalyKind,
  chargeId: string | null,
  detail: string,
): SettlementOutcome {
  return { kind: "anomaly", entry, anomaly: { kind, merchantRef: merchantRefOf(entry), chargeId, detail } };
}

/** The charge as evidence describes it: id, status, amount, currency (null for a cancelled key). */
function chargeOf(evidence: ChargeEvidence) {
  switch (evidence.source) {
    case "bank":
      return {
        id: evidence.charge.id,
        status: evidence.charge.status,
        amountMinor: evidence.charge.amount,
        currency: evidence.charge.currency,
      };
    case "signed_success":
      return {
        id: evidence.chargeId,
        status: "succeeded" as const,
        amountMinor: evidence.amountMinor,
        currency: evidence.currency,
      };
    case "key_cancelled":
      return null;
  }
}

/**
 * Applies `evidence` about the charge of `entry` (a top-up row) through `door`:
 * - succeeded: an unfinished row is completed with its credit; a failed row is credited once through its
 *   `adjustment` entry (./credit-adjustment.ts), the row itself unchanged, but only on the bank's own answer
 *   (`source: "bank"`); a signed event alone is an anomaly for a failed row;
 * - declined: an unfinished row fails (`declined_by_bank`); a credited row is an anomaly;
 * - pending: an unfinished row stays as it is, with the charge id recorded;
 * - key cancelled: an unfinished row fails (`expired`: it never reached the bank); a credited row is an anomaly;
 * - amount, currency or a recorded charge id that differ: an anomaly, nothing moves.
 * A row some other door finished meanwhile is judged again as it now is, so two doors racing end in the same state.
 *
 * Returns a {@link SettlementOutcome}. Throws database errors (a refused credit, a lost connection) after counting
 * the failure on the row ({@link noteSettleFailure}) unless `door.db` is the caller's transaction.
 */
export async function settleTopup(
  entry: LedgerEntry,
  evidence: ChargeEvidence,
  door: SettleDoor,
): Promise<SettlementOutcome> {
  try {
    return await settle(entry, evidence, door, 0);
  } catch (error) {
    if (!door.db) await noteSettleFailure(entry, error);
    throw error;
  }
}

/** A row judged again after a refused move is terminal (or fenced): one more round is all it can take. */
const SETTLE_ROUNDS_MAX = 2;

/** The charge as {@link chargeOf} describes it. */
type EvidencedCharge = NonNullable<ReturnType<typeof chargeOf>>;

/**
 * One round of {@link settleTopup}: the evidence checked against the row, then the row's move. A move refused because
 * another door finished the row first is judged again on the row as it now is (at most {@link SETTLE_ROUNDS_MAX}
 * rounds).
 */
async function settle(
  entry: LedgerEntry,
  evidence: ChargeEvidence,
  door: SettleDoor,
  round: number,
): Promise<SettlementOutcome> {
  const charge = chargeOf(evidence);
  const mismatch = charge ? mismatchOf(entry, charge) : null;
  if (mismatch) return mismatch;
  if (isTerminal(entry.status)) return await settleFinishedRow(entry, charge, evidence, door);
  const moved = await moveUnfinishedRow(entry, charge, door);
  if (moved.kind !== "refused") return moved;
  // Refused: another door finished the row first (judge it again as it is now), or a take-over fenced this lease.
  if (!isTerminal(moved.entry.status) || round + 1 >= SETTLE_ROUNDS_MAX)
    return { kind: "unchanged", entry: moved.entry, why: "fenced" };
  return settle(moved.entry, evidence, door, round + 1);
}

/** An anomaly when the charge's amount, currency or id differ from the row's; null when they agree. */
function mismatchOf(entry: LedgerEntry, charge: EvidencedCharge): SettlementOutcome | null {
  if (charge.amountMinor !== entry.amountMinor)
    return anomaly(
      entry,
      "amount_mismatch",
      charge.id,
      `the bank charged ${charge.amountMinor} but the row is for ${entry.amountMinor}`,
    );
  if (charge.currency !== entry.currency)
    return anomaly(
      entry,
      "currency_mismatch",
      charge.id,
      `the bank charged in ${charge.currency} but the row is in ${entry.currency}`,
    );
  if (entry.bankChargeId !== null && entry.bankChargeId !== charge.id)
    return anomaly(
      entry,
      "charge_mismatch",
      charge.id,
      `the row records charge ${entry.bankChargeId}, the bank reports ${charge.id}`,
    );
  return null;
}

/**
 * The evidence about a finished row: a success for a failed row is credited through its adjustment (on the bank's
 * own answer only); a decline or a missing charge for a credited row is an anomaly; anything else leaves it.
 */
async function settleFinishedRow(
  entry: LedgerEntry,
  charge: EvidencedCharge | null,
  evidence: ChargeEvidence,
  door: SettleDoor,
): Promise<SettlementOutcome> {
  const status = charge?.status ?? "cancelled";
  const chargeId = charge?.id ?? null;
  if (status === "succeeded" && charge) {
    if (entry.status === "succeeded") return { kind: "unchanged", entry, why: "already_succeeded" };
    if (evidence.source !== "bank")
      return anomaly(
        entry,
        "success_for_failed_row",
        chargeId,
        "a signed success for a row that had already failed: an adjustment needs the bank's own answer",
      );
    return await adjust(
      entry,
      { chargeId: charge.id, amountMinor: charge.amountMinor, currency: charge.currency },
      door,
    );
  }
  if (status === "pending")
    return { kind: "unchanged", entry, why: entry.status === "succeeded" ? "already_succeeded" : "already_failed" };
  if (entry.status === "failed") return { kind: "unchanged", entry, why: "already_failed" };
  return status === "declined"
    ? anomaly(
        entry,
        "decline_for_succeeded_row",
        chargeId,
        "the row was credited but the bank reports the charge as declined",
      )
    : anomaly(
        entry,
        "no_charge_for_succeeded_row",
        null,
        "the row was credited but the bank has no charge for its merchant reference",
      );
}

/**
 * The evidence about an unfinished row, as `door`: a pending charge's id recorded (with the request's first response
 * when it has one to give), a success credited, a decline or a cancelled key failed. `refused` with the row as it is
 * when the move's guard did not hold (another door finished it, or this lease was fenced).
 */
async function moveUnfinishedRow(
  entry: LedgerEntry,
  charge: EvidencedCharge | null,
  door: SettleDoor,
): Promise<SettlementOutcome | { readonly kind: "refused"; readonly entry: LedgerEntry }> {
  const status = charge?.status ?? "cancelled";
  const chargeId = charge?.id ?? null;
  const options = { actor: door.actor, guard: door.guard, detail: door.detail };
  const db = door.db;
  if (status === "pending") {
    if (entry.bankChargeId !== null || !chargeId) return { kind: "pending", entry };
    if (door.pendingResponse) {
      const response = door.pendingResponse(entry);
      const answered = await attachChargeAndRespond(refOf(entry), chargeId, { status: entry.status, response }, db);
      if (answered?.response) return { kind: "pending", entry: answered, responded: answered.response };
    }
    const attached = await attachCharge(refOf(entry), chargeId, db);
    return { kind: "pending", entry: attached ?? entry };
  }
  if (status === "succeeded") {
    const moved = await completeEntry(refOf(entry), { ...options, credit: true, bankChargeId: chargeId }, db);
    return moved.kind === "moved" ? { kind: "credited", entry: moved.entry } : { kind: "refused", entry: moved.entry };
  }
  const reason: FailureReason = status === "declined" ? "declined_by_bank" : "expired";
  const moved = await failEntry(refOf(entry), { ...options, reason, bankChargeId: chargeId }, db);
  return moved.kind === "moved" ? { kind: "failed", entry: moved.entry } : { kind: "refused", entry: moved.entry };
}

/** A failed row whose charge succeeded: credited once through its adjustment entry (contract section 5). */
async function adjust(entry: LedgerEntry, charge: AdjustedCharge, door: SettleDoor): Promise<SettlementOutcome> {
  const adjusted = await creditAdjustment(entry, charge, {
    actor: door.actor,
    detail: `${door.detail}; charge ${charge.chargeId} succeeded after the top-up failed`,
    db: door.db,
  });
  switch (adjusted.kind) {
    case "credited":
      return { kind: "adjusted", entry, adjustment: adjusted.adjustment };
    case "already_credited":
      return { kind: "unchanged", entry, why: "already_adjusted" };
    case "mismatch":
      return anomaly(
        entry,
        "adjustment_mismatch",
        charge.chargeId,
        `the top-up's adjustment already credits ${JSON.stringify(adjusted.adjustment.params)}`,
      );
  }
}

/**
 * Counts a failed settlement attempt on the row, of any type that settles from the bank's word (a top-up, a refund;
 * contract section 5: settlement that keeps failing is flagged after SETTLE_ATTEMPTS_MAX attempts and listed for
 * admins, with its last error; case C28). Best effort: when the database cannot take even this, the error is logged
 * and the caller's error stands. Never throws.
 */
export async function noteSettleFailure(entry: LedgerEntry, error: unknown): Promise<void> {
  try {
    const noted = await recordSettleFailure(refOf(entry), describeSettleError(error), env().SETTLE_ATTEMPTS_MAX);
    const level = noted?.flaggedAt ? "error" : "warn";
    log()[level](
      { err: error, merchantRef: merchantRefOf(entry), chargeId: entry.bankChargeId, failures: noted?.failures },
      `${entry.type === "topup" ? "top-up" : entry.type} settlement ${noted?.flaggedAt ? "keeps failing: flagged for attention" : "failed"}`,
    );
  } catch (recordError) {
    log().error(
      { err: recordError, cause: error, merchantRef: merchantRefOf(entry) },
      "settlement failure not recorded",
    );
  }
}

/** A short, stable description of a settlement error for the admin page: the database's verdict, not its prose. */
export function describeSettleError(error: unknown): string {
  const verdict = classifyDbError(error);
  switch (verdict.kind) {
    case "unknown":
      return error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 300) : "unknown error";
    case "retryable":
      return `retryable database error ${verdict.sqlstate}`;
    case "already_claimed":
      return "unique violation on the claim index";
    case "connection_lost":
      return `connection to the database lost (${verdict.cause})`;
    default:
      return `${verdict.kind.replaceAll("_", " ")}${verdict.constraint ? ` on ${verdict.constraint}` : ""}`;
  }
}
