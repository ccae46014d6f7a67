/**
 * The app's client for the bank's refunds (docs/bank-sandbox.md "Refunds"; contract section 11). Outcomes are
 * values, as in ./client.ts: `refund` / `found` when the bank answered and we understood it, `rejected` when it
 * answered 4xx (it did not act), `unknown` when we cannot know whether it acted (the caller must not guess).
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

export type BankRefundStatus = "pending" | "succeeded" | "failed";

/** A refund as the bank reports it. `amount` is in minor units; `merchantRef` is the Idempotency-Key it was made with. */
export interface BankRefund {
  id: string;
  status: BankRefundStatus;
  merchantRef: string;
  chargeId: string;
  amount: number;
  currency: string;
  createdAt: string;
}

const refundSchema = z.object({
  id: z.string().regex(/^[\x21-\x7e]{1,200}$/),
  status: z.enum(["pending", "succeeded", "failed"]),
  merchantRef: z.string().min(1),
  chargeId: z.string().min(1),
  amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  currency: z.string().regex(/^[A-Z]{3}$/),
  createdAt: z.string().min(1),
});

export type CreateRefundResult =
  | { kind: "refund"; refund: BankRefund; replayed: boolean }
  | UnknownOutcome
  | RejectedOutcome;
export type GetRefundResult =
  | { kind: "found"; refund: BankRefund }
  | { kind: "not_found" }
  | UnknownOutcome
  | RejectedOutcome;

export type ListChargeRefundsResult = { kind: "refunds"; refunds: BankRefund[] } | UnknownOutcome | RejectedOutcome;

export interface CreateRefundInput {
  /** The refund's key at the bank (`refund:<userId>:<refundId>`), sent as `Idempotency-Key`. */
  merchantRef: string;
  /** The refunded charge's id (the top-up's `bank_charge_id`). */
  chargeId: string;
  /** Positive integer, minor units. */
  amountMinor: number;
}

/**
 * Asks the bank to refund: `POST /refunds` with `Idempotency-Key: <merchantRef>` and `{ chargeId, amount }`. Safe to
 * repeat: the bank makes at most one refund per key and answers a repeat with the same refund.
 *
 * @returns `refund` (201 new, 200 repeat with `replayed: true`; status `pending`, `succeeded` or `failed`);
 *   `rejected` (404 `charge_not_found`, 409 `charge_not_refundable` or `charge_disputed`, 422
 *   `refund_exceeds_charge` or `idempotency_key_reused`, 400): the bank made no refund for this request (a repeat of
 *   a key it already refunded answers that refund, never a refusal); `unknown`: a refund may exist.
 * @throws only for invalid options (a bug).
 */
export async function createRefund(input: CreateRefundInput, options: BankCallOptions): Promise<CreateRefundResult> {
  const raw = await call(options, "POST", "refunds", {
    idempotencyKey: input.merchantRef,
    body: { chargeId: input.chargeId, amount: input.amountMinor },
  });
  if (raw.kind === "unknown") return raw;
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = refundSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("refund body does not match the protocol");
  if (parsed.data.merchantRef !== input.merchantRef) return badResponse("refund for another merchant reference");
  return { kind: "refund", refund: parsed.data, replayed: raw.status === 200 };
}

/**
 * Reads one refund: `GET /refunds/{id}`. The bank's word on a refund's status (a `refund.failed` event is only a
 * claim until this confirms it).
 *
 * @returns `found`, `not_found` (404), `rejected` (other 4xx) or `unknown`.
 * @throws only for invalid options (a bug).
 */
export async function getRefund(refundId: string, options: BankCallOptions): Promise<GetRefundResult> {
  const raw = await call(options, "GET", `refunds/${encodeURIComponent(refundId)}`);
  if (raw.kind === "unknown") return raw;
  if (raw.status === 404) return { kind: "not_found" };
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = refundSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("refund body does not match the protocol");
  if (parsed.data.id !== refundId) return badResponse("another refund than the one asked for");
  return { kind: "found", refund: parsed.data };
}

/**
 * Lists one charge's refunds: `GET /refunds?chargeId=<id>` (docs/bank-sandbox.md, "Refunds"), in creation order,
 * as the bank reports them now.
 *
 * @returns `refunds` (possibly empty), `rejected` (4xx) or `unknown` (no usable answer).
 * @throws only for invalid options (a bug).
 */
export async function listChargeRefunds(chargeId: string, options: BankCallOptions): Promise<ListChargeRefundsResult> {
  const raw = await call(options, "GET", `refunds?chargeId=${encodeURIComponent(chargeId)}`);
  if (raw.kind === "unknown") return raw;
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = z.object({ refunds: z.array(refundSchema).max(10_000) }).safeParse(raw.json);
  if (!parsed.success) return badResponse("refund list does not match the protocol");
  if (parsed.data.refunds.some((refund) => refund.chargeId !== chargeId)) return badResponse("another charge's refund");
  return { kind: "refunds", refunds: parsed.data.refunds };
}
