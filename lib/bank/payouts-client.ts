/**
 * The app's client for the bank's payouts (docs/bank-sandbox.md "Payouts"): money sent from the merchant to a bank
 * account. Outcomes are values, as in ./client.ts: `payout` / `found` / `page` when the bank answered and we
 * understood it, `not_found` when it has no such payout, `rejected` when it answered 4xx (it did not act), `unknown`
 * when we cannot know whether it acted (the caller must not guess: ask {@link findPayoutByReference} later).
 */
import { z } from "zod";
import {
  badResponse,
  call,
  classifyStatus,
  type BankCallOptions,
  type RejectedOutcome,
  type UnknownOutcome,
} from "./client";

/** A sandbox account number: 10 digits, the last the Luhn check digit of the first 9. */
const ACCOUNT_NUMBER_PATTERN = /^[0-9]{10}$/;

/**
 * True when `s` is a sandbox account number, a payout's `destination`: exactly 10 ASCII digits whose last digit is
 * the Luhn check digit (ISO/IEC 7812-1, the card numbers' check) of the first 9. The bank answers
 * `422 invalid_destination` for anything else, so the app checks with this same function before it asks.
 *
 * @param s any value; non-strings are not account numbers.
 */
export function isSandboxAccountNumber(s: string): boolean {
  if (typeof s !== "string" || !ACCOUNT_NUMBER_PATTERN.test(s)) return false;
  let sum = 0;
  // From the right: the check digit as it is, then every second digit doubled (minus 9 when over 9).
  for (let i = 0; i < s.length; i++) {
    let digit = s.charCodeAt(s.length - 1 - i) - 48;
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

export type BankPayoutStatus = "pending" | "paid" | "failed" | "returned";

/** Printable ASCII without spaces, 1..`max` characters: ids, references and reason codes as the bank writes them. */
const printable = (max: number) => z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), "printable ASCII");
/** Ids of 200 characters are far above any provider's (the sandbox's are 27); a reference is at most 400. */
const idSchema = printable(200);
const merchantRefSchema = printable(400);
const amountSchema = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const currencySchema = z.string().regex(/^[A-Z]{3}$/, "ISO 4217 code");
const isoSchema = z.iso.datetime({ offset: true });
/** Reason codes are short snake_case words (`insufficient_funds_at_bank`, `account_closed`); 100 is generous. */
const reasonSchema = printable(100);

const payoutSchema = z
  .object({
    id: idSchema,
    merchantRef: merchantRefSchema,
    amount: amountSchema,
    currency: currencySchema,
    destination: z.string().refine(isSandboxAccountNumber, "a sandbox account number"),
    status: z.enum(["pending", "paid", "failed", "returned"]),
    createdAt: isoSchema,
    updatedAt: isoSchema,
    settledAt: isoSchema.optional(),
    returnedAt: isoSchema.optional(),
    failureReason: reasonSchema.optional(),
    returnId: idSchema.optional(),
    returnReason: reasonSchema.optional(),
  })
  .refine((p) => p.status !== "failed" || p.failureReason !== undefined, "a failed payout says why")
  .refine((p) => p.status !== "returned" || (p.returnId !== undefined && p.returnedAt !== undefined), {
    message: "a returned payout has its return's id and time",
  });

/** A payout as the bank reports it. `amount` in minor units; times ISO-8601 UTC. */
export type BankPayout = z.infer<typeof payoutSchema>;

const pageSchema = z.object({
  // The bank's largest page is 1000 payouts.
  payouts: z.array(payoutSchema).max(1000),
  hasMore: z.boolean(),
  nextCursor: z.string().min(1).max(100),
});

/**
 * A payout webhook event's body (`payout.paid`, `payout.failed`, `payout.returned`), checked for shape and bounds.
 * `data.status` is the payout's status when the event was made, which agrees with `type`; events may arrive late,
 * twice or out of order (a `payout.returned` before its `payout.paid`), so the bank's word is
 * {@link getPayout}, not the event.
 */
export const payoutEventSchema = z
  .object({
    id: idSchema,
    type: z.enum(["payout.paid", "payout.failed", "payout.returned"]),
    data: z.object({
      payoutId: idSchema,
      merchantRef: merchantRefSchema,
      amount: amountSchema,
      currency: currencySchema,
      status: z.enum(["paid", "failed", "returned"]),
      returnId: idSchema.optional(),
      returnReason: reasonSchema.optional(),
      failureReason: reasonSchema.optional(),
    }),
  })
  .refine((event) => event.type === `payout.${event.data.status}`, "data.status agrees with type")
  .refine((event) => event.type !== "payout.returned" || event.data.returnId !== undefined, {
    message: "a payout.returned event names its return",
  })
  .meta({
    id: "PayoutEvent",
    description:
      "A payout settled (paid or failed) or was returned by the receiving bank (docs/bank-sandbox.md, Payouts).",
  });

/** A payout event, checked for shape and bounds. */
export type PayoutEvent = z.infer<typeof payoutEventSchema>;

export interface CreatePayoutInput {
  /** The payout's merchant reference, `payout:<userId>:<refId>` (`payoutMerchantRefFor`), sent as Idempotency-Key. */
  merchantRef: string;
  /** Positive integer, minor units. */
  amountMinor: number;
  /** ISO 4217 alphabetic code, e.g. `USD`. */
  currency: string;
  /** A sandbox account number ({@link isSandboxAccountNumber}). */
  destination: string;
}

export type CreatePayoutResult =
  | { kind: "payout"; payout: BankPayout; replayed: boolean }
  | UnknownOutcome
  | RejectedOutcome;
export type GetPayoutResult =
  | { kind: "found"; payout: BankPayout }
  | { kind: "not_found" }
  | UnknownOutcome
  | RejectedOutcome;
export type ListPayoutsResult =
  | { kind: "page"; payouts: BankPayout[]; hasMore: boolean; nextCursor: string }
  | UnknownOutcome
  | RejectedOutcome;

/**
 * Asks the bank to pay out: `POST /payouts` with `Idempotency-Key: <merchantRef>` and
 * `{ merchantRef, amount, currency, destination }`. Safe to repeat: the bank makes at most one payout per key and
 * answers a repeat with the same payout.
 *
 * @returns `payout` (201 new, or 200 repeat with `replayed: true`; status `pending` until it settles);
 *   `rejected` (422 `invalid_destination` or `idempotency_key_reused`, 400 `invalid_request`, 413, 415): the bank
 *   made no payout for this request; `unknown` (`timeout`, `network`: the reply was lost, `server_error`: 5xx,
 *   `bad_response`: unreadable or another key's payout): a payout may exist, ask {@link findPayoutByReference}.
 * @throws only for invalid options (a bug).
 */
export async function createPayout(input: CreatePayoutInput, options: BankCallOptions): Promise<CreatePayoutResult> {
  const raw = await call(options, "POST", "payouts", {
    idempotencyKey: input.merchantRef,
    body: {
      merchantRef: input.merchantRef,
      amount: input.amountMinor,
      currency: input.currency,
      destination: input.destination,
    },
  });
  if (raw.kind === "unknown") return raw;
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = payoutSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("payout body does not match the protocol");
  // Another key's payout would settle the wrong row: an unreadable answer, never a success.
  if (parsed.data.merchantRef !== input.merchantRef) return badResponse("payout for another merchant reference");
  return { kind: "payout", payout: parsed.data, replayed: raw.status === 200 };
}

/**
 * Reads one payout: `GET /payouts/{id}`, the bank's word on its status (an event is only a claim until this
 * confirms it).
 *
 * @returns `found`, `not_found` (404), `rejected` (other 4xx) or `unknown`.
 * @throws only for invalid options (a bug).
 */
export async function getPayout(payoutId: string, options: BankCallOptions): Promise<GetPayoutResult> {
  const raw = await call(options, "GET", `payouts/${encodeURIComponent(payoutId)}`);
  return readOnePayout(raw, (payout) => payout.id === payoutId, "another payout than the one asked for");
}

/**
 * Asks whether the bank ever received a payout for this key: `GET /payouts?merchantRef=<ref>`. How a payout whose
 * {@link createPayout} outcome was unknown is settled: `not_found` means no payout exists for the key (yet: a
 * request still in flight may make one).
 *
 * @returns `found`, `not_found` (404), `rejected` (other 4xx) or `unknown`.
 * @throws only for invalid options (a bug).
 */
export async function findPayoutByReference(merchantRef: string, options: BankCallOptions): Promise<GetPayoutResult> {
  const raw = await call(options, "GET", `payouts?${new URLSearchParams({ merchantRef }).toString()}`);
  return readOnePayout(raw, (payout) => payout.merchantRef === merchantRef, "payout for another merchant reference");
}

function readOnePayout(
  raw: Awaited<ReturnType<typeof call>>,
  isTheOne: (payout: BankPayout) => boolean,
  otherwise: string,
): GetPayoutResult {
  if (raw.kind === "unknown") return raw;
  if (raw.status === 404) return { kind: "not_found" };
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = payoutSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("payout body does not match the protocol");
  if (!isTheOne(parsed.data)) return badResponse(otherwise);
  return { kind: "found", payout: parsed.data };
}

/**
 * One page of payouts created or changed since `since` (an ISO-8601 time with offset, or the `nextCursor` of an
 * earlier page): `GET /payouts?since=&limit=`, in the order of their last change, each once, as it is now. Repeat
 * with `nextCursor` while `hasMore`; later, the last `nextCursor` lists only what changed since.
 *
 * @param options also `limit`, 1..1000 (the bank defaults to 100).
 * @returns `page`, `rejected` (e.g. 400 for a bad `since`), or `unknown`.
 * @throws only for invalid options (a bug).
 */
export async function listPayoutsSince(
  since: string,
  options: BankCallOptions & { limit?: number },
): Promise<ListPayoutsResult> {
  const query = new URLSearchParams({ since });
  if (options.limit !== undefined) query.set("limit", String(options.limit));
  const raw = await call(options, "GET", `payouts?${query.toString()}`);
  if (raw.kind === "unknown") return raw;
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = pageSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("payout page does not match the protocol");
  return { kind: "page", ...parsed.data };
}
