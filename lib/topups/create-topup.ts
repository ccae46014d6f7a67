/**
 * Creates a top-up: claim, charge at the bank, record what the bank said, store the first response.
 * Contract sections 1-3 and 5.
 */
import { env } from "../env";
import { log } from "../log";
import { countOperation } from "../metrics/registry";
import { createCharge } from "../bank/client";
import { merchantRefFor } from "../bank/merchant-ref";
import { pool } from "../db";
import {
  claimAndAdmitTopup,
  fromClaimRun,
  fromExisting,
  getEntryById,
  operationKey,
  runClaimedOperation,
  storeResponse,
  type FinishedClaim,
  type LedgerEntry,
  type OperationResult,
  type StoredResponse,
} from "../ledger";
import { gateNewOperation, rateLimitedResult } from "../limits/new-operation-rate";
import { admissionOf, admitTopup, topupCeiling } from "./admit-topup";
import { settleTopup, type ChargeEvidence } from "./settle-topup";
import { topupResponse, topupResponseOnWrite } from "./topup-response";

export interface CreateTopupInput {
  /** From the authenticated session or API token, never from a request body. */
  readonly userId: string;
  /** The top-up's own reference, already validated (contract section 1). */
  readonly refId: string;
  /** Positive integer in minor units, already validated against MAX_AMOUNT_MINOR. */
  readonly amountMinor: number;
  /** ISO 4217; the wallet's currency. */
  readonly currency: string;
}

/**
 * Runs one top-up exactly once per `(user, "topup", refId)`.
 *
 * The winner claims the key and, in the same statement and commit, checks that the credit will have room under
 * MAX_BALANCE_MINOR (lib/ledger/topup-admission.ts, docs/decisions/044; contract section 5, case C15): without room
 * the row fails with a stored `422 balance_limit_exceeded` and the bank is never called. With room the row is
 * `processing` when the claim commits; the request then calls the bank with the merchant
 * reference as `Idempotency-Key` (so a retried call can never create a second charge) and hands the answer to the
 * one settlement function (./settle-topup.ts) as the lease holder: `succeeded` credits the wallet in the same
 * statement, `declined` fails the row, `pending` records the charge id together with the request's first response
 * (one statement) and leaves the webhook to finish, and a key
 * the bank reports cancelled (409) fails it as `expired`. A timeout or lost reply leaves the row `processing` for
 * the webhook or the reconciler (the outcome is unknown, so nothing guesses). The response it returns,
 * 201 `{ topup: T }` with the status known at that moment (./topup-response.ts), is stored first-writer-wins.
 *
 * Returns `response` (`replayed: true` for losers), `mismatch` (same refId, other amount or currency),
 * `in_progress`, or `refused rate_limited` for a new refId past OPS_PER_MINUTE (nothing written). Throws on database failures; the row then stays claimed with a lease that the reconciler
 * takes over when it expires (case C12).
 */
export async function createTopup(input: CreateTopupInput): Promise<OperationResult> {
  return countOperation("topup", await runTopup(input));
}

/** The top-up itself (see {@link createTopup}). */
async function runTopup(input: CreateTopupInput): Promise<OperationResult> {
  const key = operationKey(input.userId, "topup", input.refId);
  const params = { amount: input.amountMinor, currency: input.currency };
  // Contract section 9: a key with a row replays and is never rate limited; a new key counts once.
  const gate = await gateNewOperation(key, params);
  if (gate.kind === "cached") return fromExisting(gate.outcome);
  if (gate.kind === "rate_limited") return rateLimitedResult(gate.retryAfterS);
  const ceiling = topupCeiling(input.amountMinor, input.currency);
  const run = await runClaimedOperation<null>({
    key,
    params,
    // The gate has just read the replay copy.
    replayCopy: "read_by_caller",
    attempt: async ({ leaseOwner, mayCommit }) => {
      // One autocommit statement: the claim and the admission commit together (docs/decisions/044).
      mayCommit();
      const entry = await claimAndAdmitTopup(
        pool(),
        {
          key,
          amountMinor: input.amountMinor,
          currency: input.currency,
          params,
          leaseOwner,
          leaseMs: env().LEASE_MS,
          actor: "request",
        },
        ceiling,
      );
      if (!entry) return { kind: "lost" };
      // No room under the ceiling: the row was born failed with its 422 stored, and the bank is never called.
      if (entry.response) return { kind: "decided", response: entry.response, detail: null };
      return { kind: "claimed", entry };
    },
    finish: (entry) => finishTopup(input, entry),
  });
  return fromClaimRun(run);
}

/**
 * The top-up's work once its claim has committed (the claim runner's `finish`): the bank's charge of an admitted row,
 * settled as the lease holder, then the first response, stored first-writer-wins. `claimed` is our own row as the
 * claim's statement admitted it, also when the claim's answer was lost with the connection and the retry found the
 * row (`processing` under our attempt: admitted, and we still own it). `initiated` is not reachable through
 * ledger_claim_topup, which admits in the claim's commit; such a row is admitted here. Throws on database failures.
 */
async function finishTopup(input: CreateTopupInput, claimed: LedgerEntry): Promise<FinishedClaim<null>> {
  const admission =
    claimed.status === "initiated"
      ? await admitTopup(claimed, claimed.fencingToken, "request")
      : admissionOf(claimed, claimed.fencingToken);
  if (admission.kind === "no_room") return { response: admission.response, replayed: false, detail: null };
  // Fenced: our lease was taken over (this request stalled past LEASE_MS before reaching the bank). The new owner
  // drives the row now, so this request must not call the bank; it answers with what the row says.
  const charged =
    admission.kind === "admitted"
      ? await chargeAdmittedTopup(input, admission.entry)
      : { entry: admission.entry, responded: null };
  const ref = { userId: input.userId, entryId: claimed.id };
  const stored = charged.responded
    ? { stored: true, response: charged.responded }
    : await storeResponse(ref, topupResponse(charged.entry));
  return { response: stored.response, replayed: !stored.stored, detail: null };
}

/**
 * Calls the bank for an admitted top-up `entry` (`processing` under our lease) with the merchant reference as
 * `Idempotency-Key`, and hands its answer to the one settlement function as the lease holder. Returns the row as it
 * is now, and the first response when the settlement stored it together with a pending charge's id.
 */
async function chargeAdmittedTopup(
  input: CreateTopupInput,
  entry: LedgerEntry,
): Promise<{ entry: LedgerEntry; responded: StoredResponse | null }> {
  const settings = env();
  const charged = await createCharge(
    {
      merchantRef: merchantRefFor(input.userId, input.refId),
      amountMinor: input.amountMinor,
      currency: input.currency,
    },
    { bankUrl: settings.BANK_URL, timeoutMs: settings.BANK_TIMEOUT_MS },
  );
  let evidence: ChargeEvidence | null = null;
  if (charged.kind === "charge") evidence = { source: "bank", charge: charged.charge };
  else if (charged.kind === "rejected" && charged.status === 409 && charged.code === "idempotency_key_cancelled")
    // The key was given up at the bank (by the reconciler, or a failure event the bank could not match): no
    // charge exists or ever will.
    evidence = { source: "key_cancelled" };
  if (!evidence) {
    // Unknown outcome (timeout, lost reply, bank down) or a refusal we cannot interpret: the row stays
    // `processing`; the webhook or the reconciler, asking the bank by merchant reference, finishes it.
    log().warn({ userId: input.userId, refId: input.refId, bank: charged }, "top-up charge outcome unknown");
    const current = await getEntryById({ userId: entry.userId, entryId: entry.id });
    return { entry: current ?? entry, responded: null };
  }
  const settled = await settleTopup(entry, evidence, {
    actor: "request",
    guard: { kind: "lease", fencingToken: entry.fencingToken },
    detail: "request: the bank's answer to POST /charges",
    pendingResponse: topupResponseOnWrite,
  });
  if (settled.kind === "anomaly")
    log().warn({ anomaly: settled.anomaly }, "top-up: the bank's answer disagrees with the row");
  return { entry: settled.entry, responded: settled.kind === "pending" ? (settled.responded ?? null) : null };
}
