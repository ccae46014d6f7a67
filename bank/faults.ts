/**
 * Sandbox switches (contract section 5): which faults a new charge gets, from its refId prefix or from the global
 * rates. Decided once, when the charge is created, and stored with it, so a restart or a repeated request never
 * changes a charge's behaviour.
 */
import type { FaultRates, PayoutFaultRates } from "./config";
import type { ChargeFaults } from "./state";
import { parseMerchantRef, parsePayoutMerchantRef } from "../lib/bank/merchant-ref";

/** refId prefixes and the fault each one switches on (contract section 5; docs/bank-sandbox.md). */
export const FAULT_PREFIXES: Readonly<Record<keyof ChargeFaults, string>> = {
  decline: "sbx-decline-",
  slow: "sbx-slow-",
  lost: "sbx-lost-",
  dup: "sbx-dup-",
  reorder: "sbx-reorder-",
  nohook: "sbx-nohook-",
};

/** Which faults apply to a payout, decided once when it is made (docs/bank-sandbox.md "Payouts"). */
export interface PayoutFaults {
  /** Settles `failed` instead of `paid` (the rate is `fail`). */
  fail: boolean;
  slow: boolean;
  lost: boolean;
  dup: boolean;
  /** Paid, then returned, with `payout.returned` delivered before `payout.paid`. */
  reorder: boolean;
  /** Paid, then returned `BANK_PAYOUT_RETURN_DELAY_MS` later (switch only: charges have no such rate). */
  returns: boolean;
  nohook: boolean;
}

/**
 * refId prefixes of `payout:<userId>:<refId>` and the payout fault each one switches on. `unavailable` is answered
 * `503` before anything is made, so it is never stored with a payout. No prefix here is the start of another.
 */
export const PAYOUT_FAULT_PREFIXES: Readonly<Record<keyof PayoutFaults | "unavailable", string>> = {
  fail: "sbx-po-fail-",
  slow: "sbx-po-slow-",
  lost: "sbx-po-lost-",
  dup: "sbx-po-dup-",
  reorder: "sbx-po-reorder-",
  returns: "sbx-po-return-",
  nohook: "sbx-po-nohook-",
  unavailable: "sbx-po-5xx-",
};

/** The brief for payouts: the duplicate switch delivers each payout event twice (2 deliveries, one event id). */
export const PAYOUT_DUPLICATE_COPIES = 2;

/** Contract section 5: the duplicate switch sends each webhook 3 times. */
export const DUPLICATE_COPIES = 3;

/** A source of uniform numbers in [0, 1). */
export type Random = () => number;

/**
 * mulberry32: a tiny, well-mixed 32-bit PRNG, so runs with `BANK_FAULT_SEED` draw the same faults in the same
 * order. Not for secrets (ids use node:crypto).
 *
 * @param seed any 32-bit unsigned integer.
 * @returns a function returning numbers in [0, 1).
 */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Decides a new charge's faults: a fault is on when the merchant reference's refId starts with its prefix, or
 * when a draw falls under its global rate. Exactly one draw per fault kind is made for every charge, whatever
 * the prefix, so a seeded run stays reproducible.
 *
 * @param merchantRef the charge's key; references that are not `topup:<userId>:<refId>` get rate-based faults only.
 * @param rates probabilities 0..1 per fault kind.
 * @param random the draw source.
 */
export function decideFaults(merchantRef: string, rates: FaultRates, random: Random): ChargeFaults {
  const refId = parseMerchantRef(merchantRef)?.refId ?? "";
  const decide = (kind: keyof ChargeFaults): boolean => {
    const drawn = random() < rates[kind];
    return refId.startsWith(FAULT_PREFIXES[kind]) || drawn;
  };
  return {
    decline: decide("decline"),
    slow: decide("slow"),
    lost: decide("lost"),
    dup: decide("dup"),
    reorder: decide("reorder"),
    nohook: decide("nohook"),
  };
}

/** True when the payout reference's refId carries the switch that answers `503` without making anything. */
export function payoutUnavailableSwitch(merchantRef: string): boolean {
  const refId = parsePayoutMerchantRef(merchantRef)?.refId ?? "";
  return refId.startsWith(PAYOUT_FAULT_PREFIXES.unavailable);
}

/**
 * Decides a new payout's faults like {@link decideFaults} does a charge's: by the refId prefix of
 * `payout:<userId>:<refId>`, or by a draw under the payout rate of the same kind (one draw per kind with a rate,
 * whatever the prefix, so a seeded run stays reproducible). `returns` has no rate: it is a switch only.
 */
export function decidePayoutFaults(merchantRef: string, rates: PayoutFaultRates, random: Random): PayoutFaults {
  const refId = parsePayoutMerchantRef(merchantRef)?.refId ?? "";
  const decide = (kind: keyof PayoutFaultRates): boolean => {
    const drawn = random() < rates[kind];
    return refId.startsWith(PAYOUT_FAULT_PREFIXES[kind]) || drawn;
  };
  return {
    fail: decide("fail"),
    slow: decide("slow"),
    lost: decide("lost"),
    dup: decide("dup"),
    reorder: decide("reorder"),
    returns: refId.startsWith(PAYOUT_FAULT_PREFIXES.returns),
    nohook: decide("nohook"),
  };
}

/**
 * Delay before retry number `attemptsMade + 1` of a webhook: exponential back-off with "equal jitter".
 * The ceiling is `min(maxMs, baseMs * 2^(attemptsMade - 1))`; the delay is uniform in [ceiling/2, ceiling], so it
 * still grows geometrically (retries never bunch up) while jitter spreads deliveries that failed together.
 *
 * @param attemptsMade attempts already made, at least 1.
 * @param baseMs first ceiling, ms. @param maxMs largest ceiling, ms. @param random the jitter source.
 * @returns milliseconds to wait.
 */
export function retryDelayMs(attemptsMade: number, baseMs: number, maxMs: number, random: Random): number {
  // 2^30 caps the exponent: beyond it the ceiling is maxMs anyway, and Math.pow stays finite.
  const exponent = Math.min(Math.max(attemptsMade - 1, 0), 30);
  const ceilingMs = Math.min(maxMs, baseMs * 2 ** exponent);
  return Math.round(ceilingMs / 2 + random() * (ceilingMs / 2));
}
