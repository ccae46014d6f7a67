/**
 * Refunds a succeeded top-up, partially or in full (contract section 11): claim and reserve in one statement, then ask
 * the bank, then settle from its answer and store the first response. An admin's operation: the key is
 * `(top-up owner, "refund", refundId)`, so two admins sending the same refundId get one refund and identical answers.
 */
import { createRefund as postBankRefund } from "../bank/refunds-client";
import { pool } from "../db";
import { env } from "../env";
import { log } from "../log";
import { countOperation } from "../metrics/registry";
import { formatMinor } from "../money";
import {
  claimRefund,
  findEntryByKey,
  fromClaimRun,
  getEntryById,
  markProcessing,
  operationKey,
  runClaimedOperation,
  type ClaimAttempt,
  type FinishedClaim,
  type LedgerEntry,
  type OperationParams,
  type OperationResult,
  type RefundClaimRequest,
} from "../ledger";
import { problemStoredResponse } from "../problems";
import { refundMerchantRefFor } from "./refund-ref";
import { settleRefund, storeRefundResponse, type RefundEvidence } from "./settle-refund";

export interface CreateRefundInput {
  /** The top-up's owner (from the admin route's path, checked to exist by the caller). */
  readonly userId: string;
  /** The refunded top-up's ref id (contract section 1). */
  readonly topupRefId: string;
  /** The refund's own reference, chosen by the admin's client (contract section 1). */
  readonly refundId: string;
  /** Positive integer, minor units, already validated against MAX_AMOUNT_MINOR. */
  readonly amountMinor: number;
}

export type RefundResult =
  | OperationResult
  /** No top-up has this ref id for this user (404, not stored). */
  | { readonly kind: "topup_not_found" }
  /** The top-up is not (yet) succeeded: nothing claimed (409 topup_not_refundable, not stored). */
  | { readonly kind: "topup_not_refundable"; readonly status: string };

/**
 * Runs one refund exactly once per `(userId, "refund", refundId)`.
 *
 * 1. One statement claims the key and reserves the money (lib/ledger `claimRefund`): the wallet and the top-up's
 *    refundable remainder go down with the claim, or the row is stored `failed` with its 422 `topup_disputed` (a
 *    dispute on the charge is open or lost, case C26), 402 `insufficient_funds`, 402 `debt_outstanding` (a debt is
 *    open, contract section 12) or 422 `refund_exceeds_topup` and nothing moves.
 *    A payment after this point cannot spend the refunded money.
 * 2. The winner records `processing` and calls `POST /refunds` with `Idempotency-Key: refund:<userId>:<refundId>`
 *    (so a repeat, by this request or the reconciler, never makes a second refund).
 * 3. The bank's answer is settled (./settle-refund.ts): `succeeded` makes the row final, `failed` or a 4xx refusal
 *    gives the reservation back, `pending` records the refund id for the webhook or the reconciler; no answer leaves
 *    the row `processing`.
 * 4. The response, 201 `{ refund }` with the status known then, is stored first-writer-wins and replayed identically.
 *
 * Returns `response`, `mismatch` (same refundId, other amount or top-up), `in_progress`, `topup_not_found` or
 * `topup_not_refundable`. Throws on database failures (the row keeps its lease; the reconciler finishes it).
 */
export async function createRefund(input: CreateRefundInput): Promise<RefundResult> {
  const result = await runRefund(input);
  return result.kind === "topup_not_found" || result.kind === "topup_not_refundable"
    ? result
    : countOperation("refund", result);
}

async function runRefund(input: CreateRefundInput): Promise<RefundResult> {
  const topup = await findEntryByKey(operationKey(input.userId, "topup", input.topupRefId));
  if (!topup) return { kind: "topup_not_found" };
  const key = operationKey(input.userId, "refund", input.refundId);
  const params: OperationParams = { amount: input.amountMinor, currency: topup.currency, topupRefId: topup.refId };
  // Nothing to claim on a top-up that is not a succeeded charge; a row under the refund's key still answers first.
  const notRefundable = { kind: "abandoned", detail: topup.status, unlessKeyTaken: true } as const;
  const run = await runClaimedOperation<null, string>({
    key,
    params,
    replayCopy: "read",
    attempt: async ({ leaseOwner, mayCommit }): Promise<ClaimAttempt<null, string>> => {
      if (topup.status !== "succeeded" || topup.bankChargeId === null) return notRefundable;
      // One autocommit statement claims the key and reserves the money, or stores the refusal.
      mayCommit();
      const claim = await claimRefund(refundClaimRequest(input, topup, params, leaseOwner), pool());
      switch (claim.kind) {
        case "reserved":
          return { kind: "claimed", entry: claim.entry };
        case "stored_refusal":
          return { kind: "decided", response: claim.entry.response, detail: null };
        case "taken":
          return { kind: "lost" };
        case "topup_not_refundable":
          return notRefundable;
      }
    },
    finish: (entry) => finishRefund(input, topup, entry),
  });
  if (run.kind === "abandoned") return { kind: "topup_not_refundable", status: run.detail };
  return fromClaimRun(run);
}

/**
 * What the refund's claim is asked (lib/ledger `claimRefund`): the key, the top-up's row, the amount in the top-up's
 * currency, the fingerprinted `params`, this run's `leaseOwner`, and the refusals it stores when it cannot reserve.
 */
function refundClaimRequest(
  input: CreateRefundInput,
  topup: LedgerEntry,
  params: OperationParams,
  leaseOwner: string,
): RefundClaimRequest {
  const amount = `${formatMinor(input.amountMinor)} ${topup.currency}`;
  return {
    key: operationKey(input.userId, "refund", input.refundId),
    topupEntryId: topup.id,
    amountMinor: input.amountMinor,
    currency: topup.currency,
    params,
    leaseOwner,
    leaseMs: env().LEASE_MS,
    actor: "admin",
    refusals: {
      insufficientFunds: problemStoredResponse(
        "insufficient_funds",
        `The balance does not cover a refund of ${amount}.`,
      ),
      debtOutstanding: problemStoredResponse(
        "debt_outstanding",
        "The wallet owes money from a disputed top-up; no refund is made until credits have repaid the debt.",
      ),
      exceedsTopup: problemStoredResponse(
        "refund_exceeds_topup",
        `A refund of ${amount} is more than what is left to refund of top-up ${topup.refId}.`,
      ),
      // Case C26: while the dispute is open or lost nothing is refundable (the dispute returns the money).
      topupDisputed: problemStoredResponse(
        "topup_disputed",
        `Top-up ${topup.refId} has a dispute at the bank that is open or was lost: the dispute returns the ` +
          `cardholder's money, so no refund is made. Refundable now: ${formatMinor(0)} ${topup.currency} of ` +
          `${formatMinor(topup.amountMinor)} ${topup.currency}.`,
        { refundableMinor: 0 },
      ),
    },
  };
}

/**
 * The refund's work once its claim has reserved the money (the claim runner's `finish`, also run on this request's
 * own claim found after a lost connection): `processing`, then the bank's `POST /refunds`, settled from its answer,
 * then the first response, stored first-writer-wins. A row taken over meanwhile (fenced) is left to the reconciler,
 * and answered with what it says. Throws database errors.
 */
async function finishRefund(
  input: CreateRefundInput,
  topup: LedgerEntry,
  claimed: LedgerEntry,
): Promise<FinishedClaim<null>> {
  const ref = { userId: claimed.userId, entryId: claimed.id };
  let entry = claimed;
  const processing = await markProcessing(ref, entry.fencingToken, { actor: "admin" });
  // Fenced: the reconciler took the row over while this request stalled; it drives the row now.
  if (processing.kind === "moved") entry = await refundAtBank(input, topup, processing.entry);
  entry = (await getEntryById(ref)) ?? entry;
  return { response: await storeRefundResponse(entry), replayed: false, detail: null };
}

/**
 * Asks the bank to refund `entry` (`processing` under our lease) on the top-up's charge, with the refund's own
 * merchant reference as `Idempotency-Key`, and settles its answer as the lease holder. Returns the row as the
 * settlement left it (unchanged when the outcome is unknown: the reconciler asks the bank later).
 */
async function refundAtBank(input: CreateRefundInput, topup: LedgerEntry, entry: LedgerEntry): Promise<LedgerEntry> {
  const settings = env();
  const answered = await postBankRefund(
    {
      merchantRef: refundMerchantRefFor(input.userId, input.refundId),
      chargeId: topup.bankChargeId!,
      amountMinor: input.amountMinor,
    },
    { bankUrl: settings.BANK_URL, timeoutMs: settings.BANK_TIMEOUT_MS },
  );
  let evidence: RefundEvidence | null = null;
  if (answered.kind === "refund") evidence = { source: "bank", refund: answered.refund };
  else if (answered.kind === "rejected")
    evidence = { source: "bank_refused", detail: `POST /refunds answered ${answered.status} ${answered.code}` };
  else log().warn({ userId: input.userId, refundId: input.refundId, bank: answered }, "refund outcome unknown");
  if (!evidence) return entry;
  const settled = await settleRefund(entry, evidence, {
    actor: "admin",
    guard: { kind: "lease", fencingToken: entry.fencingToken },
    detail: "request: the bank's answer to POST /refunds",
  });
  if (settled.kind === "anomaly")
    log().warn({ detail: settled.detail }, "refund: the bank's answer disagrees with the row");
  return settled.entry;
}
