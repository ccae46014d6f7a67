/**
 * Credits an ad reward once per ad, user and local day, within the daily cap (contract sections 1, 3 and 6;
 * cases C06 and C13).
 */
import { randomUUID } from "node:crypto";
import { withTransaction } from "../db";
import { env } from "../env";
import { log } from "../log";
import { withTransactionRetry } from "../ledger/retry";
import {
  awaitStoredResponse,
  completeEntry,
  findEntryByKey,
  fingerprint,
  fromExisting,
  insertClaim,
  jsonStoredResponse,
  operationKey,
  rewardView,
  storeResponse,
  WORKER_ID,
  type LedgerEntry,
  type OperationKey,
  type OperationParams,
  type OperationResult,
  type StoredResponse,
} from "../ledger";
import {
  capKeysExpireAtS,
  CapStoreUnavailableError,
  rewardCapStore,
  type CapOperation,
  type RewardCapStore,
} from "./cap-store";
import { rewardDay } from "./reward-day";
import { rewardRulesFromEnv, type RewardRules } from "./rules";

export interface ClaimRewardInput {
  /** From the authenticated session or API token, never from a request body. */
  readonly userId: string;
  /** The ad watched, already validated (1..117 of `[A-Za-z0-9._:-]`, contract section 1). */
  readonly adId: string;
  /** The clock: the reward's day is the local date of this instant in the rules' zone. Default: now. */
  readonly now?: Date;
}

/** What claimReward runs on; defaults are the process's cap store and the rules from the environment. */
export interface ClaimRewardDependencies {
  readonly capStore?: RewardCapStore;
  readonly rules?: RewardRules;
}

/** What the reward's stored 201 and its replays say: `{ reward: RewardView }`. */
function creditedResponse(entry: LedgerEntry): StoredResponse {
  return jsonStoredResponse(201, { reward: rewardView(entry) });
}

/**
 * Credits `rules.amountMinor` for watching `adId`, at most once per `(userId, "reward", "<adId>:<day>")`
 * where `day` is `now`'s local date in `rules.timeZone`, and only while the user's rewards of that day stay
 * within `rules.dailyCapMinor`.
 *
 * 1. A key that already has a row never touches the cap: its stored response is replayed (or waited for),
 *    or the request is refused as a mismatch when its parameters differ (contract section 6).
 * 2. Otherwise the cap is reserved in Redis first (atomically, case C13). Redis off, unreachable, timing out
 *    or holding garbage: `refused cap_store_unavailable` (503). Over the cap: `refused daily_cap_reached`
 *    (429). Neither creates a row nor is stored.
 * 3. Then one READ COMMITTED transaction claims the row, credits the wallet and stores the 201 (as
 *    createPayment does). A concurrent duplicate blocks on the claim and then replays the winner's response.
 * 4. Whatever happens after the reserve, exactly one of release or settle follows (a `finally`): settle when
 *    the credit landed, release on every other path (lost claim race, mismatch, database error, timeout).
 *    A failed release or settle is logged and leaves the reservation counted: the safe direction, which can
 *    refuse a reward but never exceed the cap.
 *
 * Returns `response` (201, new or replayed), `mismatch` (422), `in_progress` (409) or `refused` (429/503).
 * Throws database errors (500; the reservation is released first) and bugs.
 * Params fingerprinted: `{ adId, day, amount, currency }`.
 */
export async function claimReward(
  input: ClaimRewardInput,
  dependencies: ClaimRewardDependencies = {},
): Promise<OperationResult> {
  const rules = dependencies.rules ?? rewardRulesFromEnv();
  const now = input.now ?? new Date();
  const day = rewardDay(now, rules.timeZone);
  const key = operationKey(input.userId, "reward", `${input.adId}:${day}`);
  const params: OperationParams = { adId: input.adId, day, amount: rules.amountMinor, currency: rules.currency };

  // 1. A key with a row is answered from that row, before and without any cap work (contract section 6):
  // a replay at the cap replays instead of answering 429.
  if (await findEntryByKey(key)) return await answerFromExistingRow(key, params);

  // 2. Reserve. The attempt id makes this request's reserve, release and settle idempotent (C06).
  const capStore = dependencies.capStore ?? rewardCapStore();
  const operation: CapOperation = {
    userId: input.userId,
    day,
    adId: input.adId,
    attemptId: randomUUID(),
    keysExpireAtS: capKeysExpireAtS(day, rules.timeZone),
  };
  let reserved: Awaited<ReturnType<RewardCapStore["reserve"]>>;
  try {
    reserved = await capStore.reserve(operation, rules.amountMinor, rules.dailyCapMinor);
  } catch (error) {
    // The reserve may still run after its timeout (stack-notes 21): release now, so that when it runs it
    // finds the tombstone, or (same connection, in order) is undone right after it.
    await releaseQuietly(capStore, operation, "reserve failed");
    if (error instanceof CapStoreUnavailableError) {
      log().warn({ err: error, userId: input.userId, day, reason: error.reason }, "reward cap store unavailable");
      return {
        kind: "refused",
        code: "cap_store_unavailable",
        detail: "Rewards are unavailable right now; nothing was credited. Try again shortly.",
      };
    }
    throw error;
  }
  if (reserved.kind === "over_cap") {
    // Nothing was reserved and this attempt id is never sent again (no resend: lib/redis.ts), so there is
    // nothing to release.
    return {
      kind: "refused",
      code: "daily_cap_reached",
      detail: `Today's rewards reached the daily cap of ${rules.dailyCapMinor} (minor units of ${rules.currency}); come back tomorrow.`,
    };
  }
  if (reserved.kind === "after_release") {
    // A fresh attempt id cannot have been released already.
    throw new Error(`reward ${key.refId}: fresh reservation attempt found its own tombstone`);
  }

  // 3 and 4. Claim and credit; settle or release in every case.
  let landed: boolean | "unknown" = false;
  try {
    const outcome = await creditInOneTransaction(key, params, rules);
    landed = outcome.landed;
    if (outcome.response) return { kind: "response", response: outcome.response, replayed: false };
    // Lost the claim race: the winner's row is committed, so it can be read and replayed (or it differs).
    const existing = await awaitStoredResponse(key, params);
    if (!existing) throw new Error(`reward ${key.refId}: claimed row vanished`);
    return fromExisting(existing);
  } catch (error) {
    if (error instanceof CommitUncertainError) landed = await creditLandedAfterError(key, params);
    throw error;
  } finally {
    if (landed === true) await settleQuietly(capStore, operation, rules.amountMinor);
    else if (landed === false) await releaseQuietly(capStore, operation, "credit did not land");
    // "unknown": the ledger could not be read; the reservation stays counted (never exceeds the cap).
  }
}

/**
 * Claims, credits and stores the first response in one transaction. Returns the stored 201 and
 * `landed: true`, or `{ response: null, landed: false }` when another request holds the key. Throws the
 * database error as it comes when the transaction body failed (rolled back: nothing landed), and a
 * {@link CommitUncertainError} when the body finished but COMMIT failed (the commit may have happened).
 */
async function creditInOneTransaction(
  key: OperationKey,
  params: OperationParams,
  rules: RewardRules,
): Promise<{ response: StoredResponse | null; landed: boolean }> {
  let bodyFinished = false;
  try {
    const response = await withTransactionRetry(() => {
      bodyFinished = false;
      return withTransaction(async (tx): Promise<StoredResponse | null> => {
        const entry = await insertClaim(tx, {
          key,
          amountMinor: rules.amountMinor,
          currency: rules.currency,
          params,
          leaseOwner: WORKER_ID,
          leaseMs: env().LEASE_MS,
          actor: "request",
        });
        // No row back: another request holds the key and has committed (stack-notes 15). Not a result.
        if (!entry) return null;
        const ref = { userId: key.userId, entryId: entry.id };
        const moved = await completeEntry(
          ref,
          { actor: "request", guard: { kind: "lease", attempt: entry.attempt }, credit: true },
          tx,
        );
        // The row was inserted by this transaction and nobody else can see it yet: the guard cannot refuse.
        if (moved.kind !== "moved") throw new Error(`reward ${key.refId}: fresh claim refused its transition`);
        const stored = (await storeResponse(ref, creditedResponse(moved.entry), tx)).response;
        bodyFinished = true;
        return stored;
      });
    });
    return { response, landed: response !== null };
  } catch (error) {
    if (bodyFinished) throw new CommitUncertainError(error);
    throw error;
  }
}

/** The transaction body finished but COMMIT (or the connection) failed: the credit may have landed. */
class CommitUncertainError extends Error {
  constructor(cause: unknown) {
    super("reward: COMMIT failed; the credit may have landed", { cause });
    this.name = "CommitUncertainError";
  }
}

/**
 * After an error, whether the operation's credit landed, decided by the ledger: a succeeded row with this
 * request's fingerprint means it did (settle keeps it counted). Only for a {@link CommitUncertainError};
 * every other error rolled the transaction back. Returns "unknown" when the ledger cannot be read.
 */
async function creditLandedAfterError(key: OperationKey, params: OperationParams): Promise<boolean | "unknown"> {
  try {
    const entry = await findEntryByKey(key);
    return entry !== null && entry.status === "succeeded" && entry.fingerprint === fingerprint(key.type, params);
  } catch {
    return "unknown";
  }
}

async function answerFromExistingRow(key: OperationKey, params: OperationParams): Promise<OperationResult> {
  const existing = await awaitStoredResponse(key, params);
  // Read as present, then absent: only a deleted row does that, and rows are never deleted (contract section 2).
  if (!existing) throw new Error(`reward ${key.refId}: row vanished between two reads`);
  return fromExisting(existing);
}

async function releaseQuietly(capStore: RewardCapStore, operation: CapOperation, why: string): Promise<void> {
  try {
    await capStore.release(operation);
  } catch (error) {
    // The release may still run later (it was sent); if it never does, the reservation stays counted until
    // the day's keys expire and the audit lists it as stale. Refusing a reward is the safe failure.
    log().warn(
      { err: error, userId: operation.userId, day: operation.day, adId: operation.adId, why },
      "reward reservation not released",
    );
  }
}

async function settleQuietly(capStore: RewardCapStore, operation: CapOperation, amountMinor: number): Promise<void> {
  try {
    await capStore.settle(operation, amountMinor);
  } catch (error) {
    // Unsettled, the reservation still counts the credit: the counter is right; only its state says "in flight".
    log().warn(
      { err: error, userId: operation.userId, day: operation.day, adId: operation.adId },
      "reward reservation not settled",
    );
  }
}
