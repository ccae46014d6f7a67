/**
 * Sign-in, password-change and sign-up throttles run in better-auth's hooks (contract section 9, case C22); the
 * limits, what counts and why: docs/decisions/010-client-address-and-auth-throttles.md.
 */
import { createHash } from "node:crypto";
import { isIPv6 } from "node:net";
import { env } from "../env";
import { log } from "../log";
import { ensureRedisConnected, redis } from "../redis";
import { CounterLimiter, type CountOutcome, type LimitRule } from "./counter-limiter";

const MINUTE_S = 60;
const HOUR_S = 3600;

/** Contract section 9: 5 failed attempts per 15 minutes per (email, address) pair. */
export const PASSWORD_PAIR_RULE: LimitRule = { name: "password-pair", points: 5, durationS: 15 * MINUTE_S };
/** Contract section 9: 100 failed attempts per 15 minutes per address. */
export const PASSWORD_ADDRESS_RULE: LimitRule = { name: "password-address", points: 100, durationS: 15 * MINUTE_S };
/** Contract section 9: 50 failed attempts per hour per email from addresses it never signed in from. */
export const PASSWORD_EMAIL_RULE: LimitRule = { name: "password-email-new-address", points: 50, durationS: HOUR_S };

/**
 * How long an address stays "known" for an email after a successful sign-in from it: 90 days, renewed by every
 * sign-in. Longer than a typical session (7 days) so that a person who signs in weekly from home stays known.
 */
const KNOWN_ADDRESS_TTL_S = 90 * 24 * HOUR_S;
/** Addresses remembered per email, newest kept: bounds the set whatever happens. 50: a person's devices and places. */
const KNOWN_ADDRESSES_MAX = 50;

const pairLimiter = new CounterLimiter(PASSWORD_PAIR_RULE);
const addressLimiter = new CounterLimiter(PASSWORD_ADDRESS_RULE);
const emailLimiter = new CounterLimiter(PASSWORD_EMAIL_RULE);
let signUpLimiter: CounterLimiter | undefined;

/** The sign-up rule with this process's SIGNUPS_PER_HOUR. */
function signUpRule(): LimitRule {
  return { name: "signup-address", points: env().SIGNUPS_PER_HOUR, durationS: HOUR_S };
}

function hashEmail(email: string): string {
  return createHash("sha256").update(email.trim().toLowerCase(), "utf8").digest("hex");
}

/** The throttling key of an address: itself for IPv4, its /64 network for IPv6. */
export function addressKey(address: string): string {
  if (!isIPv6(address)) return address;
  const [head = "", tail = ""] = address.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = address.includes("::")
    ? [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right]
    : left;
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group || "0", 16).toString(16))
    .join(":")}::/64`;
}

function knownAddressesKey(emailHash: string): string {
  return `signin:known:${emailHash}`;
}

/** Whether `email` signed in from `address` before; false when Redis cannot say (the stricter answer). */
async function isKnownAddress(emailHash: string, address: string): Promise<boolean> {
  const client = redis();
  if (!client) return false;
  try {
    await ensureRedisConnected(client);
    return (await client.zscore(knownAddressesKey(emailHash), address)) !== null;
  } catch (error) {
    log().warn({ err: error }, "known sign-in addresses unavailable: treating the address as new");
    return false;
  }
}

/** Remembers a successful sign-in's address (one sorted set per email, scored by time, newest 50 kept). */
async function rememberAddress(emailHash: string, address: string): Promise<void> {
  const client = redis();
  if (!client) return;
  const key = knownAddressesKey(emailHash);
  try {
    await ensureRedisConnected(client);
    // One key per call: stays on one Cluster slot. Ranks 0..-(MAX+1) are the oldest beyond the newest MAX.
    await client
      .multi()
      .zadd(key, Date.now(), address)
      .zremrangebyrank(key, 0, -(KNOWN_ADDRESSES_MAX + 1))
      .expire(key, KNOWN_ADDRESS_TTL_S)
      .exec();
  } catch (error) {
    log().warn({ err: error }, "could not remember a sign-in address");
  }
}

/** A password attempt that was let through: what it counted, to refund when it succeeds. */
export interface PasswordAttempt {
  readonly emailHash: string;
  readonly address: string;
  readonly counted: ReadonlyArray<{ limiter: CounterLimiter; key: string }>;
}

export type PasswordAttemptDecision =
  | { readonly allowed: true; readonly attempt: PasswordAttempt }
  | { readonly allowed: false; readonly retryAfterS: number };

/**
 * Counts one password attempt for `email` from `address` against the three limits, before the password is
 * checked.
 *
 * @param email the email as submitted (case and surrounding spaces do not matter).
 * @param address the client's address from lib/http/client-address.ts.
 * @returns `allowed` with the attempt (pass it to {@link finishPasswordAttempt}), or `allowed: false` with the
 *   seconds until the refusing window ends; a refused attempt is not counted.
 * @throws nothing for Redis failures (see CounterLimiter).
 */
export async function beginPasswordAttempt(email: string, address: string): Promise<PasswordAttemptDecision> {
  const emailHash = hashEmail(email);
  const addressId = addressKey(address);
  const checks: Array<{ limiter: CounterLimiter; key: string }> = [
    { limiter: pairLimiter, key: `${emailHash}:${addressId}` },
    { limiter: addressLimiter, key: addressId },
  ];
  if (!(await isKnownAddress(emailHash, addressId))) checks.push({ limiter: emailLimiter, key: emailHash });
  const counted: Array<{ limiter: CounterLimiter; key: string }> = [];
  for (const check of checks) {
    const outcome: CountOutcome = await check.limiter.count(check.key);
    counted.push(check);
    if (!outcome.allowed) {
      await refundAll(counted);
      return { allowed: false, retryAfterS: outcome.retryAfterS };
    }
  }
  return { allowed: true, attempt: { emailHash, address: addressId, counted } };
}

/**
 * Settles an attempt: a success refunds what it counted (only failures stay counted) and remembers the address
 * as one this email signs in from; a failure stays counted.
 */
export async function finishPasswordAttempt(attempt: PasswordAttempt, succeeded: boolean): Promise<void> {
  if (!succeeded) return;
  await refundAll(attempt.counted);
  await rememberAddress(attempt.emailHash, attempt.address);
}

async function refundAll(counted: ReadonlyArray<{ limiter: CounterLimiter; key: string }>): Promise<void> {
  await Promise.all(counted.map(({ limiter, key }) => limiter.refund(key)));
}

/**
 * Counts one sign-up attempt from `address` (SIGNUPS_PER_HOUR per hour).
 *
 * @returns `allowed`, or `allowed: false` with the seconds until the address's hour ends.
 */
export async function countSignUp(address: string): Promise<CountOutcome> {
  const rule = signUpRule();
  if (!signUpLimiter || signUpLimiter.rule.points !== rule.points) signUpLimiter = new CounterLimiter(rule);
  return signUpLimiter.count(addressKey(address));
}

/**
 * Mail a person can ask for by typing an address ("forgot password", "send the check again"): 5 per hour per address
 * typed, so nobody can fill someone's inbox, and 20 per hour per client address, so nobody can probe many. Counted
 * whether or not an account exists, so the answer says nothing about that (docs/decisions/054-mail-outbox.md).
 */
export const MAIL_REQUEST_EMAIL_RULE: LimitRule = { name: "mail-request-email", points: 5, durationS: HOUR_S };
/** See {@link MAIL_REQUEST_EMAIL_RULE}. */
export const MAIL_REQUEST_ADDRESS_RULE: LimitRule = { name: "mail-request-address", points: 20, durationS: HOUR_S };
const mailRequestEmailLimiter = new CounterLimiter(MAIL_REQUEST_EMAIL_RULE);
const mailRequestAddressLimiter = new CounterLimiter(MAIL_REQUEST_ADDRESS_RULE);

/**
 * Counts one request for mail to `email` from the client `address` against both rules (client address first: a
 * refused request is not counted against the typed address).
 * @returns `allowed`, or `allowed: false` with the seconds until the refusing window ends.
 * @throws nothing for Redis failures (see CounterLimiter).
 */
export async function countMailRequest(email: string, address: string): Promise<CountOutcome> {
  const byAddress = await mailRequestAddressLimiter.count(addressKey(address));
  if (!byAddress.allowed) return byAddress;
  return mailRequestEmailLimiter.count(hashEmail(email));
}
