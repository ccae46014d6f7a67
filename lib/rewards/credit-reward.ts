/**
 * Credits an ad reward once per ad, user and local day, within the daily cap (contract sections 1, 3 and 6;
 * cases C06 and C13).
 */
import { randomUUID } from "node:crypto";
import { countOperation, metrics } from "../metrics/registry";
import { retryingPool, withConnection } from "../db";
import { env } from "../env";
import { log } from "../log";
import {
  awaitStoredEntry,
  CommitUncertainError,
  decideRewardUnderWalletLock,
  findEntryByKey,
  fingerprint,
  fromExisting,
  operationKey,
  runClaimedOperation,
  succeededRewardResponse,
  type DecidedReward,
  type OperationKey,
  type OperationParams,
  type OperationResult,
} from "../ledger";
import {
  capKeysExpireAtS,
  CapStoreUnavailableError,
  rewardCapStore,
  type CapOperation,
  type RewardCapStore,
} from "./cap-store";
import { readRewardDayCredited } from "./read-reward-day-credited";
import { rewardDay } from "./reward-day";
import { admitNewOperation, rateLimitedResult } from "../limits/new-operation-rate";
import { rewardRulesFromEnv, type RewardRules } from "./rules";
import { balanceLimitResponse } from "../wallet/balance-limit-response";

export interface CreditRewardInput {
  /** From the authenticated session or API token, never from a request body. */
  readonly userId: string;
  /** The ad watched, already validated (1..117 of `[A-Za-z0-9._:-]`, contract section 1). */
  readonly adId: string;
  /** The clock: the reward's day is the local date of this instant in the rules' zone. Default: now. */
  readonly now?: Date;
}

/** What creditReward runs on; defaults are the process's cap store and the rules from the environment. */
export interface CreditRewardDependencies {
  readonly capStore?: RewardCapStore;
  readonly rules?: RewardRules;
  /**
   * Whether PostgreSQL holds the cap too (`reward_cap_days`). Always true in the app; false exists only
   * for the negative control that shows the Redis-loses-writes test fails without it
   * (tests/integration/rewards-cap-ledger.test.ts).
   */
  readonly ledgerCap?: boolean;
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
 * 3. Then one autocommit statement (lib/ledger reward-statement.ts, run by the claim runner) locks the wallet,
 *    claims the row, counts the credit against the day's row in PostgreSQL (`reward_cap_days`: refused past the
 *    cap, whatever Redis said), credits the wallet and stores the 201 (as createPayment does). A concurrent
 *    duplicate waits on the wallet's lock, then finds the key taken and replays the winner's response.
 *    PostgreSQL refusing means Redis handed back a counter below the truth (a failover lost acknowledged
 *    writes): the statement rolls back (no row), the answer is 429, and the counter is raised back to the
 *    ledger's total.
 * 4. Whatever happens after the reserve, exactly one of release or confirm follows (a `finally`): confirm when
 *    the credit landed (raising the counter to at least the day's ledger total), release on every other path
 *    (lost claim race, mismatch, database error, timeout). A failed release or confirm is logged and leaves the
 *    reservation counted: the safe direction, which can refuse a reward but never exceed the cap.
 *
 * 3a. A reward whose credit would take the balance past MAX_BALANCE_MINOR (counting the money that may still reach it: ledger_pending_credits_minor)
 *    fails instead, in the same statement, with a stored `422 balance_limit_exceeded` that replays like any first
 *    response; the reservation is released (contract section 5, case C15).
 *
 * Returns `response` (201 or the stored 422 balance_limit_exceeded, new or replayed), `mismatch` (422), `in_progress` (409) or `refused` (429
 * rate_limited past OPS_PER_MINUTE, 429 daily_cap_reached, 503).
 * Throws database errors (500; the reservation is released first) and bugs.
 * Params fingerprinted: `{ adId, day, amount, currency }`.
 */
export async function creditReward(
  input: CreditRewardInput,
  dependencies: CreditRewardDependencies = {},
): Promise<OperationResult> {
  return countOperation("reward", await runReward(input, dependencies));
}

/** The reward itself (see {@link creditReward}). */
async function runReward(input: CreditRewardInput, dependencies: CreditRewardDependencies): Promise<OperationResult> {
  const rules = dependencies.rules ?? rewardRulesFromEnv();
  const now = input.now ?? new Date();
  const day = rewardDay(now, rules.timeZone);
  const key = operationKey(input.userId, "reward", `${input.adId}:${day}`);
  const params: OperationParams = { adId: input.adId, day, amount: rules.amountMinor, currency: rules.currency };

  // 1. A key with a row is answered from that row, before and without any cap work (contract section 6):
  // a replay at the cap replays instead of answering 429.
  const existing = await findEntryByKey(key);
  if (existing) return fromExisting((await awaitStoredEntry(existing, params)).outcome);

  // A new key counts once against OPS_PER_MINUTE, before the cap (contract section 9's order of checks); the
  // row was just read as absent, so a refusal here never refuses a key that has a row.
  const admitted = await admitNewOperation(key);
  if (!admitted.allowed) return rateLimitedResult(admitted.retryAfterS);

  // 2. Reserve. The attempt id makes this request's reserve, release and confirm idempotent (C06).
  const reward: RewardAttempt = {
    input,
    rules,
    day,
    key,
    params,
    capStore: dependencies.capStore ?? rewardCapStore(),
    ledgerCap: dependencies.ledgerCap ?? true,
    operation: {
      userId: input.userId,
      day,
      adId: input.adId,
      attemptId: randomUUID(),
      keysExpireAtS: capKeysExpireAtS(day, rules.timeZone),
    },
  };
  const reserved = await reserveCap(reward);
  if (!reserved.ok) return reserved.result;
  // 3 and 4. Claim and credit; confirm or release in every case.
  return creditReserved(reward, reserved.reservation);
}

/** One reward request past its key check: what it credits, and its reservation's operation in the cap store. */
interface RewardAttempt {
  readonly input: CreditRewardInput;
  readonly rules: RewardRules;
  /** The reward's day, `YYYY-MM-DD` in the rules' zone. */
  readonly day: string;
  readonly key: OperationKey;
  readonly params: OperationParams;
  readonly capStore: RewardCapStore;
  /** Whether PostgreSQL holds the cap too (see {@link CreditRewardDependencies.ledgerCap}). */
  readonly ledgerCap: boolean;
  readonly operation: CapOperation;
}

type Reservation = Awaited<ReturnType<RewardCapStore["reserve"]>>;

/**
 * Reserves the reward's amount in the cap store (case C13). Returns the reservation, or the answer when there is
 * none: 503 `cap_store_unavailable` (the reservation released at once, in case the reserve still runs) or 429
 * `daily_cap_reached`. Throws what the store throws otherwise, and an Error when a fresh attempt id finds its own
 * tombstone (a bug).
 */
async function reserveCap(
  reward: RewardAttempt,
): Promise<{ ok: true; reservation: Reservation } | { ok: false; result: OperationResult }> {
  const { capStore, operation, rules } = reward;
  let reserved: Reservation;
  try {
    reserved = await capStore.reserve(operation, rules.amountMinor, rules.dailyCapMinor);
    metrics().rewardReservations.inc({ outcome: reserved.kind });
  } catch (error) {
    metrics().rewardReservations.inc({ outcome: "unavailable" });
    // The reserve may still run after its timeout (docs/development.md note 21): release now, so that when it runs it
    // finds the tombstone, or (same connection, in order) is undone right after it.
    await releaseQuietly(capStore, operation, "reserve failed");
    if (!(error instanceof CapStoreUnavailableError)) throw error;
    log().warn(
      { err: error, userId: operation.userId, day: operation.day, reason: error.reason },
      "reward cap store unavailable",
    );
    const detail = "Rewards are unavailable right now; nothing was credited. Try again shortly.";
    return { ok: false, result: { kind: "refused", code: "cap_store_unavailable", detail } };
  }
  // Nothing was reserved and this attempt id is never sent again (no resend: lib/redis.ts), so there is nothing to
  // release.
  if (reserved.kind === "over_cap") return { ok: false, result: dailyCapReached(rules) };
  // A fresh attempt id cannot have been released already.
  if (reserved.kind === "after_release")
    throw new Error(`reward ${reward.key.refId}: fresh reservation attempt found its own tombstone`);
  return { ok: true, reservation: reserved };
}

/**
 * Claims and credits a reserved reward in one statement (lib/ledger reward-statement.ts, run by the claim runner),
 * then confirms the reservation when the credit landed and releases it on every other path, in a `finally`. Returns
 * the first response (201, or the stored 422 balance_limit_exceeded), the loser's answer, or 429 `daily_cap_reached`
 * when PostgreSQL refused the credit past the cap (`reservation`'s counter was below the ledger). Throws what the
 * runner throws (the reservation confirmed or released as the ledger then says).
 */
async function creditReserved(reward: RewardAttempt, reservation: Reservation): Promise<OperationResult> {
  const { input, rules, day, key, params, capStore, operation } = reward;
  let landed: boolean | "unknown" = false;
  // The day's credited total in the ledger, when known: the counter is never left below it.
  let ledgerTotalMinor: number | undefined;
  try {
    const ran = await decideRewardRun(reward);
    if (ran.kind === "won") {
      // Succeeded: the credit landed. Failed: no room under MAX_BALANCE_MINOR, a stored outcome of a claimed row
      // (contract section 5); the credit did not land, the reservation is released.
      if (ran.detail.entry.status === "succeeded") {
        landed = true;
        ledgerTotalMinor = ran.detail.creditedTodayMinor ?? undefined;
      }
      return { kind: "response", response: ran.detail.response, replayed: false };
    }
    if (ran.kind === "abandoned") {
      // PostgreSQL refused the credit past the cap and wrote nothing: the day's total as it is now (unknown when the
      // read fails: the release then has no floor, and the answer is still the 429).
      ledgerTotalMinor = await readRewardDayCredited(input.userId, day, retryingPool()).catch(() => undefined);
      const counterMinor = "counterMinor" in reservation ? reservation.counterMinor : null;
      log().warn(
        { userId: input.userId, day, ledgerTotalMinor, counterMinor },
        "reward cap store counter was below the ledger: refused by PostgreSQL, counter raised",
      );
      return dailyCapReached(rules);
    }
    // Lost the claim race, or our own earlier attempt committed before its connection died (the retry then finds
    // the key taken): the row says whether this operation's credit landed (succeeded, same fingerprint).
    landed = ran.entry.status === "succeeded" && ran.outcome.kind !== "mismatch";
    return fromExisting(ran.outcome);
  } catch (error) {
    if (error instanceof CommitUncertainError) landed = await creditLandedAfterError(key, params);
    throw error;
  } finally {
    // A confirm that did not run the credit itself still raises the counter to the ledger's total, so that a lost
    // reservation is not counted twice (once by the credit's own confirm or a repair, once by this INCRBY).
    if (landed === true && ledgerTotalMinor === undefined && reward.ledgerCap) {
      ledgerTotalMinor = await readRewardDayCredited(input.userId, day, retryingPool()).catch(() => undefined);
    }
    if (landed === true) await confirmQuietly(capStore, operation, rules.amountMinor, ledgerTotalMinor);
    else if (landed === false) await releaseQuietly(capStore, operation, "credit did not land", ledgerTotalMinor);
    // "unknown": the ledger could not be read; the reservation stays counted (never exceeds the cap).
  }
}

/**
 * The reward's claim and credit through the claim runner: one autocommit statement (lib/ledger
 * `decideRewardUnderWalletLock`) decides it (`won`), refuses it past PostgreSQL's cap (`abandoned`, nothing written),
 * or finds the key taken (`existing`). Throws what the runner throws.
 */
function decideRewardRun(reward: RewardAttempt) {
  const { rules, day, key, params } = reward;
  const maxBalanceMinor = env().MAX_BALANCE_MINOR;
  return runClaimedOperation<DecidedReward, null>({
    key,
    params,
    // The row was read before the cap: a key with a row never gets here.
    replayCopy: "read_by_caller",
    // A connection first: failing to get one sends nothing, so the runner throws that failure as it is and the
    // reservation is released at once, instead of being held on a ledger read that may fail the same way.
    attempt: ({ mayCommit }) =>
      withConnection(async (client) => {
        // One autocommit statement: once sent, it may have committed whatever its answer (a lost connection).
        mayCommit();
        const decided = await decideRewardUnderWalletLock(client, {
          key,
          amountMinor: rules.amountMinor,
          currency: rules.currency,
          params,
          day,
          capMinor: reward.ledgerCap ? rules.dailyCapMinor : null,
          maxBalanceMinor,
          succeeded: succeededRewardResponse(params, rules.amountMinor, rules.currency),
          refusal: balanceLimitResponse(rules.amountMinor, rules.currency, maxBalanceMinor),
        });
        if (decided.kind === "decided") return { kind: "decided", response: decided.response, detail: decided };
        if (decided.kind === "over_cap") return { kind: "abandoned", detail: null };
        return { kind: "lost" };
      }),
  });
}

function dailyCapReached(rules: RewardRules): OperationResult {
  return {
    kind: "refused",
    code: "daily_cap_reached",
    detail: `Today's rewards reached the daily cap of ${rules.dailyCapMinor} (minor units of ${rules.currency}); come back tomorrow.`,
  };
}

/**
 * Whether this operation's credit landed, decided by the ledger: a succeeded row with this request's fingerprint
 * means it did (confirm keeps it counted). Used when the transaction's own answer cannot say: after a
 * {@link CommitUncertainError}. Returns "unknown" when the ledger cannot be read.
 */
async function creditLandedAfterError(key: OperationKey, params: OperationParams): Promise<boolean | "unknown"> {
  try {
    const entry = await findEntryByKey(key);
    return entry !== null && entry.status === "succeeded" && entry.fingerprint === fingerprint(key.type, params);
  } catch {
    return "unknown";
  }
}

async function releaseQuietly(
  capStore: RewardCapStore,
  operation: CapOperation,
  why: string,
  floorMinor?: number,
): Promise<void> {
  try {
    const released = await capStore.release(operation, floorMinor);
    metrics().rewardReleases.inc({ outcome: released.kind });
  } catch (error) {
    metrics().rewardReleases.inc({ outcome: "failed" });
    // The release may still run later (it was sent); if it never does, the reservation stays counted until
    // the day's keys expire and the audit lists it as stale. Refusing a reward is the safe failure.
    log().warn(
      { err: error, userId: operation.userId, day: operation.day, adId: operation.adId, why },
      "reward reservation not released",
    );
  }
}

async function confirmQuietly(
  capStore: RewardCapStore,
  operation: CapOperation,
  amountMinor: number,
  floorMinor?: number,
): Promise<void> {
  try {
    await capStore.confirm(operation, amountMinor, floorMinor);
  } catch (error) {
    // Unconfirmed, the reservation still counts the credit: the counter is right; only its state says "in flight".
    log().warn(
      { err: error, userId: operation.userId, day: operation.day, adId: operation.adId },
      "reward reservation not confirmed",
    );
  }
}
