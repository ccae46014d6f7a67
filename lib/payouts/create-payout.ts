/**
 * Withdraws from the wallet to a bank account (contract section 14; docs/decisions/060): claim and hold in one
 * statement, then the bank's `POST /payouts` with the payout's merchant reference as Idempotency-Key, then settle from
 * its answer and store the first response. An answer that never came leaves the row `processing` with its money held:
 * outcome unknown, ended only by the bank's word (the webhook, or the reconciler asking again with the same key).
 */
import { createPayout as postBankPayout } from "../bank/payouts-client";
import { payoutMerchantRefFor } from "../bank/merchant-ref";
import { pool } from "../db";
import { env } from "../env";
import { log } from "../log";
import { countOperation } from "../metrics/registry";
import { formatMinor } from "../money";
import {
  claimPayout,
  fromClaimRun,
  fromExisting,
  attachChargeAndRespond,
  getEntryById,
  markProcessing,
  operationKey,
  runClaimedOperation,
  type FinishedClaim,
  type LedgerEntry,
  type OperationParams,
  type OperationResult,
  type PayoutClaimRequest,
  type StoredResponse,
} from "../ledger";
import { gateNewOperation, rateLimitedResult } from "../limits/new-operation-rate";
import { problemStoredResponse } from "../problems";
import { payoutResponseTemplate, settlePayout, storePayoutResponse, type PayoutEvidence } from "./settle-payout";

export interface CreatePayoutInput {
  /** From the authenticated session or API token. */
  readonly userId: string;
  /** The withdrawal's reference, already validated like a ref id (contract section 1). */
  readonly refId: string;
  /** Positive integer in minor units, already validated against MAX_AMOUNT_MINOR. */
  readonly amountMinor: number;
  readonly currency: string;
  /** The sandbox bank account number, already validated (10 digits, Luhn). */
  readonly destination: string;
}

/** The payout's fingerprinted parameters: amount, currency and destination (contract sections 1 and 14). */
export function payoutParams(input: Omit<CreatePayoutInput, "userId" | "refId">): OperationParams {
  return { amount: input.amountMinor, currency: input.currency, destination: input.destination };
}

/**
 * Withdraws `amountMinor` to `destination` once per `(user, "payout", refId)`.
 *
 * 1. One statement claims the key and holds the money (lib/ledger `claimPayout`), or stores the refusal: 402
 *    `debt_outstanding`, 402 `insufficient_funds` (the available balance: held money is never spent twice), 422
 *    `payout_limit_exceeded` (PAYOUT_DAILY_LIMIT_MINOR per UTC day).
 * 2. The row is born `processing`; the bank's `POST /payouts` with Idempotency-Key `payout:<userId>:<refId>`, settled from its
 *    answer (lib/payouts/settle-payout.ts): paid, failed (the hold given back), or pending. A 4xx other than a key
 *    reused means the bank made no payout: the hold is given back. No answer (timeout, lost connection, 5xx) changes nothing: the row stays
 *    `processing`, its money held, until the bank's word arrives.
 * 3. The response, 201 `{ payout }` with the status known then, is stored first-writer-wins and replayed identically.
 *
 * Returns `response`, `mismatch`, `in_progress` or `refused rate_limited`. Throws database errors (the row keeps its
 * lease; the reconciler finishes it).
 */
export async function createPayout(input: CreatePayoutInput): Promise<OperationResult> {
  return countOperation("payout", await runPayout(input));
}

async function runPayout(input: CreatePayoutInput): Promise<OperationResult> {
  const key = operationKey(input.userId, "payout", input.refId);
  const params = payoutParams(input);
  const gate = await gateNewOperation(key, params);
  if (gate.kind === "cached") return fromExisting(gate.outcome);
  if (gate.kind === "rate_limited") return rateLimitedResult(gate.retryAfterS);
  const run = await runClaimedOperation<null>({
    key,
    params,
    replayCopy: "read_by_caller",
    attempt: async ({ leaseOwner, mayCommit }) => {
      mayCommit();
      const claim = await claimPayout(payoutClaimRequest(input, params, leaseOwner), pool());
      switch (claim.kind) {
        case "held":
          return { kind: "claimed", entry: claim.entry };
        case "stored_refusal":
          return { kind: "decided", response: claim.entry.response, detail: null };
        case "taken":
          return { kind: "lost" };
      }
    },
    finish: (entry) => finishPayout(input, entry),
  });
  return fromClaimRun(run);
}

/** What the payout's claim is asked: the key, the amount, `params`, this run's lease and the refusals it stores. */
function payoutClaimRequest(input: CreatePayoutInput, params: OperationParams, leaseOwner: string): PayoutClaimRequest {
  const settings = env();
  const amount = `${formatMinor(input.amountMinor)} ${input.currency}`;
  return {
    key: operationKey(input.userId, "payout", input.refId),
    amountMinor: input.amountMinor,
    currency: input.currency,
    params,
    leaseOwner,
    leaseMs: settings.LEASE_MS,
    dailyLimitMinor: settings.PAYOUT_DAILY_LIMIT_MINOR,
    refusals: {
      insufficientFunds: problemStoredResponse("insufficient_funds", `The available balance does not cover ${amount}.`),
      debtOutstanding: problemStoredResponse(
        "debt_outstanding",
        "The wallet owes money from a disputed top-up; withdrawals resume once a credit repays it.",
      ),
      limitExceeded: problemStoredResponse(
        "payout_limit_exceeded",
        `A withdrawal of ${amount} would pass today's limit of ${formatMinor(settings.PAYOUT_DAILY_LIMIT_MINOR)} ${input.currency} (UTC day).`,
        { dailyLimitMinor: settings.PAYOUT_DAILY_LIMIT_MINOR },
      ),
    },
  };
}

/**
 * The payout's work once its claim has held the money (the claim runner's `finish`, also run on this request's own
 * claim found after a lost connection): the bank's `POST /payouts`, its answer settled and the first response stored,
 * in as few statements as the answer allows (a pending payout's id and the response in one). A row still `initiated`
 * (claimed before payouts were born `processing`) is moved first; one taken over meanwhile is the reconciler's.
 * Throws database errors.
 */
async function finishPayout(input: CreatePayoutInput, claimed: LedgerEntry): Promise<FinishedClaim<null>> {
  const ref = { userId: claimed.userId, entryId: claimed.id };
  let entry = claimed;
  if (entry.status === "initiated") {
    const processing = await markProcessing(ref, entry.fencingToken, { actor: "request" });
    if (processing.kind !== "moved") return await answerFromRow(ref, entry);
    entry = processing.entry;
  }
  if (entry.status !== "processing") return await answerFromRow(ref, entry);
  return { response: await payoutAtBank(input, entry), replayed: false, detail: null };
}

/** The row's stored response, or the one stored now from the row as it is (first writer wins). */
async function answerFromRow(
  ref: { userId: string; entryId: number },
  fallback: LedgerEntry,
): Promise<FinishedClaim<null>> {
  const entry = (await getEntryById(ref)) ?? fallback;
  return { response: entry.response ?? (await storePayoutResponse(entry)), replayed: false, detail: null };
}

/**
 * Asks the bank to pay `entry` out and settles its answer as the lease holder. Returns the first response now stored:
 * a pending payout's id and the response are written by one statement; a final answer's settlement returns the row it
 * moved, whose response is then stored; no answer leaves the row `processing` (money held) and answers so.
 */
async function payoutAtBank(input: CreatePayoutInput, entry: LedgerEntry): Promise<StoredResponse> {
  const settings = env();
  const ref = { userId: entry.userId, entryId: entry.id };
  const answered = await postBankPayout(
    {
      merchantRef: payoutMerchantRefFor(input.userId, input.refId),
      amountMinor: input.amountMinor,
      currency: input.currency,
      destination: input.destination,
    },
    { bankUrl: settings.BANK_URL, timeoutMs: settings.BANK_TIMEOUT_MS },
  );
  if (answered.kind === "payout" && answered.payout.status === "pending") {
    const attached = await attachChargeAndRespond(ref, answered.payout.id, {
      status: "processing",
      response: payoutResponseTemplate(entry),
    });
    if (attached?.response) return attached.response;
  }
  let evidence: PayoutEvidence | null = null;
  if (answered.kind === "payout") evidence = { source: "bank", payout: answered.payout };
  // A 4xx is the bank's word that it made no payout for this key, except a key reused with other parameters: then a
  // payout exists for the key, and only its own answer (the reconciler asks by reference) may end the row.
  else if (answered.kind === "rejected" && answered.code !== "idempotency_key_reused")
    evidence = { source: "bank_refused", detail: `POST /payouts answered ${answered.status} ${answered.code}` };
  else log().warn({ userId: input.userId, refId: input.refId, bank: answered }, "payout outcome unknown");
  let current = entry;
  if (evidence) {
    const settled = await settlePayout(entry, evidence, {
      actor: "request",
      guard: { kind: "lease", fencingToken: entry.fencingToken },
      detail: "request: the bank's answer to POST /payouts",
    });
    if (settled.kind === "anomaly")
      log().warn({ detail: settled.detail }, "payout: the bank's answer disagrees with the row");
    current = settled.entry;
  }
  return current.response ?? (await storePayoutResponse(current));
}
