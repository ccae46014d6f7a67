/**
 * The storm's simulated users. Each user does one operation at a time (a top-up, a reward or a payment), with a
 * think time between operations, and duplicates some of them the way real clients do (./observations.ts,
 * DuplicationPattern). Some top-ups carry the sandbox's dispute switches, so lost, won and reversed disputes arrive
 * as webhooks during the storm (contract section 12). Admins refund a share of the top-ups the users saw
 * acknowledged, partially and in full, with the same duplicates, and try over-refunds that must be refused
 * (contract section 11). Every request and its outcome is recorded. Traffic starts no new operation after the
 * deadline, and no request at all after the hard stop, so the phase ends by itself.
 */
import type { Agent } from "node:http";
import { seededRandom } from "../../bank/faults";
import type { z } from "zod";
import type { payoutRequestSchema, transferRequestSchema } from "../../lib/http/operation-requests";
import type { RequestBody } from "../lib/api-types";
import { postJson, type HttpOutcome } from "./http-client";
import {
  isFinalAnswer,
  isStoredAnswer,
  type AttemptRecord,
  type DuplicationPattern,
  type OperationKind,
  type OperationRecord,
  type OverRefund,
  type RefusedTransfer,
  type TrafficCounters,
} from "./observations";

/** A simulated user: its `"user".id` and personal API token. */
export interface StormUser {
  readonly index: number;
  readonly id: string;
  readonly token: string;
  /** The user's sign-in address: what a transfer to this user names. Transfers need it (see `moneyOut`). */
  readonly email?: string;
}

/**
 * Money leaving the wallets (contract sections 14 and 15): payouts to `destination` (a sandbox account number), with
 * the bank's payout switches, and transfers between the users (by their `email`), to unknown addresses at
 * `unknownDomain` and to oneself.
 */
export interface MoneyOutOptions {
  readonly destination: string;
  readonly unknownDomain: string;
}

export interface TrafficOptions {
  readonly users: readonly StormUser[];
  readonly appUrls: readonly string[];
  /** One keep-alive agent per instance, same order as `appUrls`. */
  readonly agents: readonly Agent[];
  readonly seed: number;
  /** No new operation starts after this (ms since the epoch). */
  readonly deadlineMs: number;
  /** No request is sent after this (ms since the epoch): in-flight operations stop retrying. */
  readonly hardStopMs: number;
  readonly operations: OperationRecord[];
  readonly counters: TrafficCounters;
  /**
   * Attempts per request and the longest back-off, when not the defaults (6 and 1.6 s, ~3-8 s of retrying). The
   * cluster storm gives clients 12 attempts up to 4 s apart (~30 s), like a user retrying through a database
   * failover (~11-20 s of write outage behind Patroni, docs/scaling.md).
   */
  readonly retry?: { readonly attemptsMax: number; readonly backoffMsMax: number };
  /**
   * The instances' MAX_BALANCE_MINOR when the storm set it (its own services), else null: then every
   * {@link CEILING_USER_EVERY}th user starts with a top-up that takes it to {@link CEILING_HEADROOM_MINOR} under it.
   */
  readonly maxBalanceMinor?: number | null;
  /**
   * The admin account the refunds are sent with (an API token of a user whose role is `admin`), or null for a storm
   * without refunds.
   */
  readonly admin?: StormUser | null;
  /**
   * The sandbox bank, whose `/_sandbox/disputes` control plays the cardholder who disputes a charge while an admin
   * refunds it (case C26); null for a storm without such disputes.
   */
  readonly bankUrl?: string | null;
  /** Payouts and transfers alongside the rest ({@link MoneyOutOptions}); absent or null: neither. */
  readonly moneyOut?: MoneyOutOptions | null;
}

/** A top-up a user saw acknowledged (a 2xx): what the admins may refund. */
interface RefundableTopup {
  readonly user: StormUser;
  readonly refId: string;
  readonly amountMinor: number;
  /** When the 2xx arrived (ms since the epoch): refunds start after {@link REFUND_AFTER_MS}. */
  readonly seenAtMs: number;
}

/**
 * Every 8th user (5 of the short storm's 40, 25 of the full storm's 200) is a wallet near its ceiling: its first
 * operation is a funding top-up to {@link CEILING_HEADROOM_MINOR} below MAX_BALANCE_MINOR, so that its later top-ups
 * (5-50 units) and rewards race the ceiling, while payments make room again now and then (case C15).
 */
const CEILING_USER_EVERY = 8;
/** Room left after the funding top-up: 2,500 minor units (25.00), about half of a storm top-up's range. */
const CEILING_HEADROOM_MINOR = 2500;

/** True for the users that start near the ceiling ({@link CEILING_USER_EVERY}). */
export function isCeilingUser(userIndex: number): boolean {
  return userIndex % CEILING_USER_EVERY === 0;
}

/**
 * Mix of operations, in percent. Payments are the most frequent (they are the cheapest path, claim and debit in one
 * transaction) so that many of them race the top-ups that fund them; rewards are a quarter so that users reach the
 * daily cap (three rewards of 5 against the storm's cap of 15, services.ts) and 429s happen.
 */
const KIND_WEIGHTS: readonly [OperationKind, number][] = [
  ["topup", 35],
  ["reward", 25],
  ["payment", 40],
];

/**
 * The mix with money leaving the wallets (payouts and transfers, {@link MoneyOutOptions}): each 8%, taken from the
 * others, so a short storm sends a hundred or so of each, every payout switch and transfer plan a dozen times, while
 * the top-ups still fund them.
 */
const MONEY_OUT_KIND_WEIGHTS: readonly [OperationKind, number][] = [
  ["topup", 32],
  ["reward", 22],
  ["payment", 30],
  ["payout", 8],
  ["transfer", 8],
];

/**
 * The payout switches of the sandbox (docs/bank-sandbox.md "Payouts"), by refId prefix, in percent of the payouts.
 * `sbx-po-5xx-` is left out on purpose: the bank answers it 503 forever, so its payout stays `processing` with its
 * money held by design, which the audit's no_expired_unfinished_rows would rightly flag; the sandbox has no 5xx rate
 * for payouts either.
 */
const PAYOUT_SWITCHES: readonly [string, number][] = [
  ["", 30],
  ["sbx-po-lost-", 10],
  ["sbx-po-slow-", 10],
  ["sbx-po-fail-", 10],
  ["sbx-po-dup-", 10],
  ["sbx-po-reorder-", 10],
  ["sbx-po-return-", 10],
  ["sbx-po-nohook-", 10],
];

/**
 * What a transfer does, in percent: to another storm user; `crossing`: to another user while that user sends one back
 * at the same moment (two wallets locked in opposite orders); to an address nobody has, and to oneself (both refused,
 * nothing stored).
 */
type TransferPlan = "other" | "crossing" | "unknown" | "self";
const TRANSFER_PLAN_WEIGHTS: readonly [TransferPlan, number][] = [
  ["other", 55],
  ["crossing", 25],
  ["unknown", 10],
  ["self", 10],
];

/**
 * Mix of duplication patterns, in percent: most operations are sent once (a storm of only duplicates would not be
 * realistic), and every kind of duplicate still happens hundreds of times in a full run.
 */
const PATTERN_WEIGHTS: readonly [DuplicationPattern, number][] = [
  ["single", 45],
  ["double_submit", 14],
  ["two_tabs", 14],
  ["timeout_retry", 14],
  ["late_replay", 9],
  ["mismatch_probe", 4],
];

/**
 * Ads a user can watch: 6. The storm's daily cap admits three rewards, so a user who keeps watching reaches the cap
 * (429), and with 6 ads many rewards repeat an ad already credited today (a replay, which must not touch the cap,
 * even at the cap).
 */
const ADS_PER_USER = 6;

/**
 * Think time between a user's operations: 300-1500 ms (uniform). With 200 users that is about 200 operations per
 * second at the start, roughly 300 requests per second with the duplicates: a busy but not saturated load for two
 * app instances, PostgreSQL and the bank on 2 cores, so latencies stay far below the clients' timeouts.
 */
const THINK_MS_MIN = 300;
const THINK_MS_MAX = 1500;

/**
 * A client's patience for one request: 10 s. Above the longest legitimate answer (a loser waits up to
 * IDEMPOTENCY_WAIT_MS = 3 s; a top-up's bank call is bounded by BANK_TIMEOUT_MS = 2.5 s), so only a crashed or
 * stuck server makes a normal request time out.
 */
const REQUEST_TIMEOUT_MS = 10_000;

/** The impatient first attempt of `timeout_retry`: 30-250 ms, shorter than a top-up's bank round trip. */
const SHORT_TIMEOUT_MS_MIN = 30;
const SHORT_TIMEOUT_MS_MAX = 250;

/**
 * Attempts per request (the first plus retries): 6. With back-off 100 ms doubling to 1.6 s (or the server's
 * Retry-After for 409), a request is retried for about 3-8 s, which rides out the staged crash of one instance
 * (~3 s) and the Redis restart (under a second).
 */
const ATTEMPTS_MAX = 6;
const BACKOFF_MS_FIRST = 100;
const BACKOFF_MS_MAX = 1600;

/** A double click's second request follows the first within 0-30 ms. */
const DOUBLE_SUBMIT_GAP_MS_MAX = 30;
/** A late replay or mismatch probe follows the answer after 0-500 ms. */
const FOLLOW_UP_GAP_MS_MAX = 500;

/**
 * Top-ups carrying the sandbox's dispute switches (docs/bank-sandbox.md "Disputes"), in percent of the users' top-ups:
 * 4% lost (one chargeback), 2% lost then reversed (a chargeback, then its reversal), 2% won (nothing moves). In a
 * short storm that is a dozen or two disputes, so chargebacks, debts and `402 debt_outstanding` all happen.
 */
const DISPUTE_SWITCHES: readonly [string, number][] = [
  ["", 92],
  ["sbx-dispute-", 4],
  ["sbx-dispute-reversed-", 2],
  ["sbx-dispute-won-", 2],
];

/**
 * Admins refunding at once: one per 20 users, at least 3 (so two admins sometimes refund the same top-up at once
 * with different refundIds). They share one admin account and its token, like one admin's tabs.
 */
const USERS_PER_ADMIN_WORKER = 20;
const ADMIN_WORKERS_MIN = 3;
/**
 * An admin's think time between refunds: 200-800 ms, so that three admins in the short storm's 18 s send a few dozen
 * refunds at most (fewer on a loaded machine), a small share of the users' traffic, as refunds are in a real wallet.
 */
const ADMIN_THINK_MS_MIN = 200;
const ADMIN_THINK_MS_MAX = 800;
/**
 * A top-up is refunded at least 1 s after its 2xx: long enough for most to have succeeded (the bank settles 100 ms
 * after the charge), so most refunds are made; the others are refused `409 topup_not_refundable`.
 */
const REFUND_AFTER_MS = 1000;

/**
 * What an admin does with a top-up, in percent: a partial refund; a full one, sometimes followed by 1.00 more (an
 * over-refund: refused); more than the whole top-up at once (refused); a partial refund whose bank refund fails (the
 * `sbx-refund-fail-` switch: the reservation is given back); a refund, partial or full, sent at the same moment as the
 * cardholder disputes the charge at the bank (case C26: whichever lands first, the card never gets back more than
 * was charged).
 */
type RefundPlan = "partial" | "full" | "full_then_more" | "above_topup" | "bank_fails" | "while_disputed";
const REFUND_PLAN_WEIGHTS: readonly [RefundPlan, number][] = [
  ["partial", 35],
  ["full", 15],
  ["full_then_more", 15],
  ["above_topup", 10],
  ["bank_fails", 10],
  ["while_disputed", 15],
];

/**
 * How a dispute raced with a refund ends, in percent: lost (a chargeback), or lost then reversed (a chargeback and
 * its reversal, after which what is left may be refunded again).
 */
/** The refundId prefix of a refund raced with a dispute, so the summary can count them. */
export const RACED_REFUND_PREFIX = "race-";

const RACED_DISPUTE_PLANS: readonly [("lost" | "won")[], number][] = [
  [["lost"], 70],
  [["lost", "won"], 30],
];

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function pickWeighted<T>(random: () => number, weights: readonly [T, number][]): T {
  const total = weights.reduce((sum, [, weight]) => sum + weight, 0);
  let draw = random() * total;
  for (const [value, weight] of weights) {
    draw -= weight;
    if (draw < 0) return value;
  }
  return weights[weights.length - 1]![0];
}

function between(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

/** The route an operation's requests go to. */
function requestPath(operation: OperationRecord): string {
  switch (operation.kind) {
    case "topup":
      return "/api/v1/topups";
    case "reward":
      return "/api/v1/rewards";
    case "payment":
      return "/api/v1/payments";
    case "refund":
      return `/api/v1/admin/topups/${encodeURIComponent(operation.userId)}/${encodeURIComponent(operation.topupRefId ?? "")}/refunds`;
    case "payout":
      return "/api/v1/payouts";
    case "transfer":
      return "/api/v1/transfers";
  }
}

/**
 * The JSON body of an operation's request, typed by the OpenAPI document (scripts/lib/api-types.ts): a change of
 * the API's request bodies breaks this at compile time. Payouts and transfers are not in the OpenAPI document yet:
 * theirs are typed by the routes' own request schemas (lib/http/operation-requests.ts).
 */
function requestBody(operation: OperationRecord, amountMinor: number | null): string {
  const amount = (): number => {
    if (amountMinor === null) throw new Error(`${operation.kind} ${operation.ident}: no amount planned`);
    return amountMinor;
  };
  switch (operation.kind) {
    case "topup":
      return JSON.stringify({ refId: operation.ident, amount: amount() } satisfies RequestBody<
        "/api/v1/topups",
        "post"
      >);
    case "payment":
      return JSON.stringify({
        orderId: operation.ident,
        amount: amount(),
      } satisfies RequestBody<"/api/v1/payments", "post">);
    case "reward":
      return JSON.stringify({ adId: operation.ident } satisfies RequestBody<"/api/v1/rewards", "post">);
    case "refund":
      return JSON.stringify({
        refundId: operation.ident,
        amount: amount(),
      } satisfies RequestBody<"/api/v1/admin/topups/{userId}/{refId}/refunds", "post">);
    case "payout":
      return JSON.stringify({
        refId: operation.ident,
        amount: amount(),
        destination: operation.to ?? "",
      } satisfies z.input<typeof payoutRequestSchema>);
    case "transfer":
      return JSON.stringify({
        refId: operation.ident,
        to: operation.to ?? "",
        amount: amount(),
      } satisfies z.input<typeof transferRequestSchema>);
  }
}

/**
 * Runs every user until the deadline and waits for their last operations (bounded by the hard stop).
 * Records into `options.operations` and `options.counters`. Never throws for HTTP failures.
 */
export async function runTraffic(options: TrafficOptions): Promise<void> {
  const refundable: RefundableTopup[] = [];
  const admin = options.admin;
  const adminWorkers = admin
    ? Math.max(ADMIN_WORKERS_MIN, Math.ceil(options.users.length / USERS_PER_ADMIN_WORKER))
    : 0;
  await Promise.all([
    ...options.users.map((user) => runUser(options, user, refundable)),
    ...Array.from({ length: adminWorkers }, (_, worker) => runAdmin(options, admin!, worker, refundable)),
  ]);
}

async function runUser(options: TrafficOptions, user: StormUser, refundable: RefundableTopup[]): Promise<void> {
  // One generator per user, derived from the storm's seed, so a user's choices do not depend on the others' timing.
  const random = seededRandom((options.seed + Math.imul(user.index + 1, 0x9e3779b1)) >>> 0);
  let home = user.index % options.appUrls.length;
  let sequence = 0;
  // Spread the users' first operations over the first think time, instead of all at the same millisecond.
  await sleep(between(random, 0, THINK_MS_MAX));
  // A wallet near its ceiling (case C15) is funded first; the bank may decline or lose that top-up like any other.
  let funding = typeof options.maxBalanceMinor === "number" && isCeilingUser(user.index);
  while (Date.now() < options.deadlineMs) {
    sequence += 1;
    const kind = funding ? "topup" : pickWeighted(random, options.moneyOut ? MONEY_OUT_KIND_WEIGHTS : KIND_WEIGHTS);
    if ((kind === "payout" || kind === "transfer") && options.moneyOut) {
      const pattern = pickWeighted(random, PATTERN_WEIGHTS);
      const last =
        kind === "payout"
          ? await sendPayout(options, options.moneyOut, user, sequence, pattern, random, home)
          : await sendTransfer(options, options.moneyOut, user, sequence, pattern, random, home);
      if (last.kind !== "response") home = (home + 1) % options.appUrls.length;
      await sleep(between(random, THINK_MS_MIN, THINK_MS_MAX));
      continue;
    }
    // A funding top-up is never disputed: its wallet must reach the ceiling.
    const disputeSwitch = kind === "topup" && !funding ? pickWeighted(random, DISPUTE_SWITCHES) : "";
    let pattern = funding ? "single" : pickWeighted(random, PATTERN_WEIGHTS);
    // Reward parameters are all decided by the server (ad, day, amount): a client cannot send a mismatching one.
    if (kind === "reward" && pattern === "mismatch_probe") pattern = "late_replay";
    const operation: OperationRecord = {
      kind,
      userIndex: user.index,
      userId: user.id,
      ident:
        kind === "topup"
          ? `${disputeSwitch}st-${user.index}-${sequence}`
          : kind === "payment"
            ? `so-${user.index}-${sequence}`
            : `ad-${between(random, 1, ADS_PER_USER)}`,
      // Top-ups of 5-50 units and payments of 1-30 units (minor units, 100 per unit): payments outpace top-ups at
      // times, so some are refused for insufficient funds (a stored 402).
      amountMinor: funding
        ? (options.maxBalanceMinor ?? 0) - CEILING_HEADROOM_MINOR
        : kind === "topup"
          ? between(random, 5, 50) * 100
          : kind === "payment"
            ? between(random, 1, 30) * 100
            : null,
      pattern,
      attempts: [],
    };
    funding = false;
    options.operations.push(operation);
    options.counters.operations += 1;
    const last = await sendOperation(options, user, operation, random, home);
    if (kind === "topup" && last.kind === "response" && last.status >= 200 && last.status < 300) {
      refundable.push({ user, refId: operation.ident, amountMinor: operation.amountMinor!, seenAtMs: Date.now() });
    }
    // A user whose instance dropped the connection moves to the other one, as behind a load balancer.
    if (last.kind !== "response") home = (home + 1) % options.appUrls.length;
    await sleep(between(random, THINK_MS_MIN, THINK_MS_MAX));
  }
}

/** One payout of 1-20 units to the storm's account, with a payout switch ({@link PAYOUT_SWITCHES}). */
async function sendPayout(
  options: TrafficOptions,
  moneyOut: MoneyOutOptions,
  user: StormUser,
  sequence: number,
  pattern: DuplicationPattern,
  random: () => number,
  home: number,
): Promise<HttpOutcome> {
  const operation: OperationRecord = {
    kind: "payout",
    userIndex: user.index,
    userId: user.id,
    ident: `${pickWeighted(random, PAYOUT_SWITCHES)}po-${user.index}-${sequence}`,
    to: moneyOut.destination,
    amountMinor: between(random, 1, 20) * 100,
    pattern,
    attempts: [],
  };
  options.operations.push(operation);
  options.counters.operations += 1;
  return sendOperation(options, user, operation, random, home);
}

/**
 * One transfer of 1-20 units ({@link TRANSFER_PLAN_WEIGHTS}): to another storm user; crossing one that user sends back
 * at the same moment (from its own token, with its own refId); to an unknown address; to oneself.
 */
async function sendTransfer(
  options: TrafficOptions,
  moneyOut: MoneyOutOptions,
  user: StormUser,
  sequence: number,
  pattern: DuplicationPattern,
  random: () => number,
  home: number,
): Promise<HttpOutcome> {
  const others = options.users.filter((other) => other.id !== user.id && other.email !== undefined);
  let plan = pickWeighted(random, TRANSFER_PLAN_WEIGHTS);
  if ((plan === "other" || plan === "crossing") && others.length === 0) plan = "self";
  const peer = others[Math.floor(random() * others.length)];
  const transfer = (sender: StormUser, ident: string, to: string, refusedTransfer?: RefusedTransfer) => {
    const operation: OperationRecord = {
      kind: "transfer",
      userIndex: sender.index,
      userId: sender.id,
      ident,
      to,
      amountMinor: between(random, 1, 20) * 100,
      pattern,
      attempts: [],
      ...(refusedTransfer ? { refusedTransfer } : {}),
    };
    options.operations.push(operation);
    options.counters.operations += 1;
    return operation;
  };
  switch (plan) {
    case "other":
      return sendOperation(options, user, transfer(user, `tr-${user.index}-${sequence}`, peer!.email!), random, home);
    case "crossing": {
      const there = transfer(user, `tr-${user.index}-${sequence}`, peer!.email!);
      const back = transfer(peer!, `tx-${user.index}-${sequence}`, user.email!);
      const [last] = await Promise.all([
        sendOperation(options, user, there, random, home),
        sendOperation(options, peer!, back, random, (home + 1) % options.appUrls.length),
      ]);
      return last;
    }
    case "unknown":
      return sendOperation(
        options,
        user,
        transfer(
          user,
          `tu-${user.index}-${sequence}`,
          `nobody-${user.index}-${sequence}@${moneyOut.unknownDomain}`,
          "recipient_unknown",
        ),
        random,
        home,
      );
    case "self":
      return sendOperation(
        options,
        user,
        transfer(user, `ts-${user.index}-${sequence}`, user.email ?? "", "transfer_to_self"),
        random,
        home,
      );
  }
}

/**
 * One admin refunding top-ups the users saw acknowledged until the deadline (contract section 11). Picks a top-up
 * at random among those acknowledged at least {@link REFUND_AFTER_MS} ago (two admins may pick the same one), plans
 * what to do with it ({@link REFUND_PLAN_WEIGHTS}) and sends each refund with a duplication pattern like the users'.
 */
async function runAdmin(
  options: TrafficOptions,
  admin: StormUser,
  worker: number,
  refundable: readonly RefundableTopup[],
): Promise<void> {
  const random = seededRandom((options.seed ^ Math.imul(worker + 1, 0x85ebca6b)) >>> 0);
  let home = worker % options.appUrls.length;
  let sequence = 0;
  while (Date.now() < options.deadlineMs) {
    await sleep(between(random, ADMIN_THINK_MS_MIN, ADMIN_THINK_MS_MAX));
    const ready = refundable.filter((topup) => topup.seenAtMs <= Date.now() - REFUND_AFTER_MS);
    if (ready.length === 0 || Date.now() >= options.deadlineMs) continue;
    const topup = ready[Math.floor(random() * ready.length)]!;
    const plan = pickWeighted(random, REFUND_PLAN_WEIGHTS);
    const refundId = (prefix = "") => {
      sequence += 1;
      return `${prefix}sr-${worker}-${sequence}`;
    };
    // Storm amounts are whole units (100 minor units); a partial refund is 1.00 up to the amount less 1.00.
    const partialMinor = () => between(random, 1, Math.max(1, topup.amountMinor / 100 - 1)) * 100;
    const refund = async (ident: string, amountMinor: number, overRefund?: OverRefund) => {
      const pattern = pickWeighted(random, PATTERN_WEIGHTS);
      const operation: OperationRecord = {
        kind: "refund",
        userIndex: topup.user.index,
        userId: topup.user.id,
        ident,
        topupRefId: topup.refId,
        amountMinor,
        pattern,
        attempts: [],
        ...(overRefund ? { overRefund } : {}),
      };
      options.operations.push(operation);
      options.counters.operations += 1;
      const last = await sendOperation(options, admin, operation, random, home);
      if (last.kind !== "response") home = (home + 1) % options.appUrls.length;
    };
    switch (plan) {
      case "partial":
        await refund(refundId(), partialMinor());
        break;
      case "bank_fails":
        await refund(refundId("sbx-refund-fail-"), partialMinor());
        break;
      case "full":
        await refund(refundId(), topup.amountMinor);
        break;
      case "full_then_more": {
        const fullRefundId = refundId();
        await refund(fullRefundId, topup.amountMinor);
        if (Date.now() < options.deadlineMs) await refund(refundId(), 100, { kind: "after_full", fullRefundId });
        break;
      }
      case "above_topup":
        await refund(refundId(), topup.amountMinor + 100, { kind: "above_topup" });
        break;
      case "while_disputed": {
        const amountMinor = random() < 0.5 ? topup.amountMinor : partialMinor();
        const disputePlan = pickWeighted(random, RACED_DISPUTE_PLANS);
        await Promise.all([
          refund(refundId(RACED_REFUND_PREFIX), amountMinor),
          disputeAtTheBank(options.bankUrl ?? null, topup, disputePlan),
        ]);
        break;
      }
    }
  }
}

/**
 * Plays the cardholder: opens a dispute on the charge of `topup` through the sandbox's control (docs/bank-sandbox.md
 * "Disputes"). The bank may refuse it (the charge is already disputed, or fully refunded): that is part of the race.
 * Never throws: a failed control call only means this refund raced no dispute.
 */
async function disputeAtTheBank(
  bankUrl: string | null,
  topup: RefundableTopup,
  plan: readonly ("lost" | "won")[],
): Promise<void> {
  if (bankUrl === null) return;
  try {
    const merchantRef = `topup:${topup.user.id}:${topup.refId}`;
    const charge = await fetch(`${bankUrl}/charges?merchantRef=${encodeURIComponent(merchantRef)}`, {
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!charge.ok) return;
    const { id } = (await charge.json()) as { id: string };
    await fetch(`${bankUrl}/_sandbox/disputes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chargeId: id, plan }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    }).then((answer) => answer.body?.cancel());
  } catch {
    // The bank unreachable for a moment (the cluster storm's faults do not touch it, but a timeout may): no dispute.
  }
}

/**
 * Sends one operation with its duplication pattern (./observations.ts, DuplicationPattern) from `sender`'s token,
 * starting on instance `home`; the pattern's second requests go to the other instance where it says so. Returns the
 * last outcome of the first request (the one the client acts on).
 */
async function sendOperation(
  options: TrafficOptions,
  sender: StormUser,
  operation: OperationRecord,
  random: () => number,
  home: number,
): Promise<HttpOutcome> {
  const other = (home + 1) % options.appUrls.length;
  const send = (instance: number, firstTimeoutMs: number, amountMinor = operation.amountMinor, probe = false) =>
    sendWithRetries(options, sender, operation, random, { instance, firstTimeoutMs, amountMinor, probe });

  let last: HttpOutcome;
  switch (operation.pattern) {
    case "single":
      last = await send(home, REQUEST_TIMEOUT_MS);
      break;
    case "double_submit":
      [last] = await Promise.all([
        send(home, REQUEST_TIMEOUT_MS),
        sleep(between(random, 0, DOUBLE_SUBMIT_GAP_MS_MAX)).then(() => send(home, REQUEST_TIMEOUT_MS)),
      ]);
      break;
    case "two_tabs":
      [last] = await Promise.all([send(home, REQUEST_TIMEOUT_MS), send(other, REQUEST_TIMEOUT_MS)]);
      break;
    case "timeout_retry":
      last = await send(home, between(random, SHORT_TIMEOUT_MS_MIN, SHORT_TIMEOUT_MS_MAX));
      break;
    case "late_replay":
    case "mismatch_probe": {
      last = await send(home, REQUEST_TIMEOUT_MS);
      if (last.kind === "response" && isStoredAnswer(last) && Date.now() < options.hardStopMs) {
        await sleep(between(random, 0, FOLLOW_UP_GAP_MS_MAX));
        if (operation.pattern === "late_replay") await send(other, REQUEST_TIMEOUT_MS);
        // The probe sends one more minor unit than the original: same key, other fingerprint.
        else await send(other, REQUEST_TIMEOUT_MS, (operation.amountMinor ?? 0) + 1, true);
      }
      break;
    }
  }
  return last;
}

interface SendPlan {
  instance: number;
  firstTimeoutMs: number;
  amountMinor: number | null;
  probe: boolean;
}

/**
 * Sends one request of `operation` and retries it like a careful client: after a timeout or a dropped connection
 * (on the other instance), after 409 (after its Retry-After) and after 5xx (after a back-off). Stops at a final
 * answer, after {@link ATTEMPTS_MAX} attempts, or at the hard stop. Returns the last outcome.
 */
async function sendWithRetries(
  options: TrafficOptions,
  user: StormUser,
  operation: OperationRecord,
  random: () => number,
  plan: SendPlan,
): Promise<HttpOutcome> {
  const body = requestBody(operation, plan.amountMinor);
  let instance = plan.instance;
  let last: HttpOutcome = { kind: "network", code: "not sent" };
  const attemptsMax = options.retry?.attemptsMax ?? ATTEMPTS_MAX;
  const backoffMsMax = options.retry?.backoffMsMax ?? BACKOFF_MS_MAX;
  for (let attempt = 0; attempt < attemptsMax && Date.now() < options.hardStopMs; attempt++) {
    const sentAtMs = Date.now();
    options.counters.requests += 1;
    last = await postJson(
      options.agents[instance]!,
      options.appUrls[instance]!,
      requestPath(operation),
      user.token,
      body,
      attempt === 0 ? plan.firstTimeoutMs : REQUEST_TIMEOUT_MS,
    );
    const record: AttemptRecord = {
      instance,
      outcome: last,
      sentAtMs,
      durationMs: Date.now() - sentAtMs,
      probe: plan.probe,
    };
    operation.attempts.push(record);
    if (last.kind === "response") {
      options.counters.responses += 1;
      if (isFinalAnswer(last)) return last;
    } else {
      options.counters.failures += 1;
      instance = (instance + 1) % options.appUrls.length;
    }
    const backoffMs = Math.min(BACKOFF_MS_FIRST * 2 ** attempt, backoffMsMax);
    const waitMs =
      last.kind === "response" && last.retryAfterS !== null
        ? last.retryAfterS * 1000
        : // Equal jitter: half fixed, half random, so the duplicates of one operation do not retry in lockstep.
          backoffMs / 2 + random() * (backoffMs / 2);
    await sleep(Math.min(waitMs, Math.max(0, options.hardStopMs - Date.now())));
  }
  return last;
}
