/**
 * Sandbox switches (contract section 5): which faults a new charge gets, from its refId prefix or from the global
 * rates. Decided once, when the charge is created, and stored with it, so a restart or a repeated request never
 * changes a charge's behaviour.
 */
import type { FaultRates } from "./config";
import type { ChargeFaults } from "./state";
import { parseMerchantRef } from "../lib/bank/merchant-ref";

/** refId prefixes and the fault each one switches on (contract section 5; docs/bank-sandbox.md). */
export const FAULT_PREFIXES: Readonly<Record<keyof ChargeFaults, string>> = {
  decline: "sbx-decline-",
  slow: "sbx-slow-",
  lost: "sbx-lost-",
  dup: "sbx-dup-",
  reorder: "sbx-reorder-",
  nohook: "sbx-nohook-",
};

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
