/**
 * The sandbox bank's refunds (docs/bank-sandbox.md "Refunds"): money given back on a succeeded charge, partially or
 * in full, at most one refund per Idempotency-Key, never more in total than the charge's amount. A refund is
 * `pending` when made and settles `BANK_WEBHOOK_DELAY_MS` later as `succeeded` (or `failed`, with the
 * `sbx-refund-fail-` switch), when its `refund.succeeded` / `refund.failed` webhook is queued and delivered like a
 * charge's. Decisions are synchronous (one Node thread: the key lookup and insert cannot interleave), and every
 * change is reported to the state so it is journalled and survives a restart.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { z } from "zod";
import type { BankConfig } from "./config";
import { disputeHoldsCharge } from "./disputes";
import type { BankState } from "./state";

export const REFUND_EVENT_TYPES = ["refund.succeeded", "refund.failed"] as const;
export type RefundEventType = (typeof REFUND_EVENT_TYPES)[number];

/**
 * The switch: a refund whose Idempotency-Key, or the refund id inside a `refund:<userId>:<refundId>` key, starts
 * with this prefix fails when it settles (it answers `pending` first, like every refund).
 */
export const REFUND_FAIL_PREFIX = "sbx-refund-fail-";

export type RefundStatus = "pending" | "succeeded" | "failed";

export const refundRecordSchema = z.object({
  id: z.string(),
  /** The Idempotency-Key it was made with (the merchant's reference of the refund). */
  merchantRef: z.string(),
  chargeId: z.string(),
  /** Minor units, positive, at most the charge's amount minus its earlier refunds that did not fail. */
  amount: z.number().int(),
  currency: z.string(),
  createdAt: z.string(),
  status: z.enum(["pending", "succeeded", "failed"]),
  /** The final status, decided at creation; `status` becomes this when the refund settles. */
  outcome: z.enum(["succeeded", "failed"]),
  /** Epoch ms at which the refund settles and its webhook is queued. */
  settleAtMs: z.number(),
  settled: z.boolean(),
});
export type RefundRecord = z.infer<typeof refundRecordSchema>;

/** The protocol's view of a refund: what POST/GET /refunds answer and what the webhooks carry (as `refundId`). */
export interface PublicRefund {
  id: string;
  status: RefundStatus;
  merchantRef: string;
  chargeId: string;
  amount: number;
  currency: string;
  createdAt: string;
}

export function publicRefund(refund: RefundRecord): PublicRefund {
  const { id, status, merchantRef, chargeId, amount, currency, createdAt } = refund;
  return { id, status, merchantRef, chargeId, amount, currency, createdAt };
}

export interface RefundRequest {
  merchantRef: string;
  chargeId: string;
  /** Minor units. */
  amount: number;
}

export type RefundDecision =
  | { kind: "created"; refund: RefundRecord }
  | { kind: "existing"; refund: RefundRecord }
  | { kind: "mismatch"; refund: RefundRecord; fields: Array<"chargeId" | "amount"> }
  | { kind: "no_charge" }
  | { kind: "charge_not_refundable"; status: string }
  /** The charge has a dispute open, or lost and not reversed: the cardholder's money goes back through it. */
  | { kind: "charge_disputed"; disputeId: string; disputeStatus: string }
  | { kind: "exceeds_charge"; refundableMinor: number };

/** What the desk needs from the engine: queue an event's deliveries, and re-arm the timer. */
export interface RefundDeskHooks {
  queueDelivery(event: {
    type: RefundEventType;
    chargeId: string;
    merchantRef: string;
    data: Record<string, unknown>;
    nowMs: number;
  }): void;
  schedule(): void;
}

/** True when the sandbox switch makes the refund of this key fail. */
export function refundFailSwitch(merchantRef: string): boolean {
  if (merchantRef.startsWith(REFUND_FAIL_PREFIX)) return true;
  const match = /^refund:[^:]+:(.*)$/.exec(merchantRef);
  return match?.[1]?.startsWith(REFUND_FAIL_PREFIX) ?? false;
}

/** Refunds' decisions and settlement; owned by the engine (its timer calls {@link settleDue}). */
export class RefundDesk {
  private readonly unsettled = new Set<RefundRecord>();

  constructor(
    private readonly config: BankConfig,
    private readonly state: BankState,
    private readonly logger: Logger,
    private readonly hooks: RefundDeskHooks,
  ) {
    for (const refund of state.refunds) if (!refund.settled) this.unsettled.add(refund);
  }

  /**
   * Decides a refund request. Synchronous, so two requests with one key can never both create (the map insert is
   * the claim). The caller saves the state before answering.
   *
   * @returns `existing` (a repeat), `mismatch` (same key, other charge or amount: 422), `no_charge` (404),
   *   `charge_not_refundable` (the charge did not succeed: 409), `charge_disputed` (a dispute on the charge is open,
   *   or lost and not reversed: 409, as at card acquirers, so that a refund and a chargeback never both return the
   *   same money to the card), `exceeds_charge` (422), or `created`.
   */
  decide(request: RefundRequest): RefundDecision {
    const existing = this.state.refundsByRef.get(request.merchantRef);
    if (existing) {
      const fields: Array<"chargeId" | "amount"> = [];
      if (existing.chargeId !== request.chargeId) fields.push("chargeId");
      if (existing.amount !== request.amount) fields.push("amount");
      return fields.length > 0
        ? { kind: "mismatch", refund: existing, fields }
        : { kind: "existing", refund: existing };
    }
    const charge = this.state.chargesById.get(request.chargeId);
    if (!charge) return { kind: "no_charge" };
    if (charge.status !== "succeeded") return { kind: "charge_not_refundable", status: charge.status };
    const dispute = this.state.disputesByCharge.get(charge.id);
    if (dispute && disputeHoldsCharge(dispute))
      return { kind: "charge_disputed", disputeId: dispute.id, disputeStatus: dispute.status };
    const refundableMinor = charge.amount - this.refundedMinor(charge.id);
    if (request.amount > refundableMinor) return { kind: "exceeds_charge", refundableMinor };
    const now = Date.now();
    const outcome = refundFailSwitch(request.merchantRef) ? "failed" : "succeeded";
    const refund: RefundRecord = {
      id: `re_${randomBytes(12).toString("hex")}`,
      merchantRef: request.merchantRef,
      chargeId: charge.id,
      amount: request.amount,
      currency: charge.currency,
      createdAt: new Date(now).toISOString(),
      status: "pending",
      outcome,
      settleAtMs: now + this.config.webhookDelayMs,
      settled: false,
    };
    this.state.addRefund(refund);
    this.unsettled.add(refund);
    this.logger.info({ refundId: refund.id, chargeId: charge.id, amount: refund.amount, outcome }, "refund created");
    this.hooks.schedule();
    return { kind: "created", refund };
  }

  /** Minor units of the charge's refunds that did not fail (pending ones count: their money is on its way). */
  refundedMinor(chargeId: string): number {
    let sum = 0;
    for (const refund of this.state.refundsByCharge.get(chargeId) ?? [])
      if (refund.status !== "failed") sum += refund.amount;
    return sum;
  }

  /** Epoch ms of the earliest unsettled refund, or Infinity. */
  nextSettleAtMs(): number {
    let next = Infinity;
    for (const refund of this.unsettled) next = Math.min(next, refund.settleAtMs);
    return next;
  }

  /** Settles every refund due at `nowMs` and queues its webhook. Returns true when anything changed. */
  settleDue(nowMs: number): boolean {
    let changed = false;
    for (const refund of [...this.unsettled]) {
      if (refund.settleAtMs > nowMs) continue;
      refund.status = refund.outcome;
      refund.settled = true;
      this.state.refundChanged(refund);
      this.unsettled.delete(refund);
      this.logger.info({ refundId: refund.id, status: refund.status }, "refund settled");
      this.hooks.queueDelivery({
        type: refund.status === "succeeded" ? "refund.succeeded" : "refund.failed",
        chargeId: refund.chargeId,
        merchantRef: refund.merchantRef,
        data: {
          refundId: refund.id,
          chargeId: refund.chargeId,
          merchantRef: refund.merchantRef,
          amount: refund.amount,
          currency: refund.currency,
        },
        nowMs,
      });
      changed = true;
    }
    return changed;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP: POST /refunds, GET /refunds?chargeId=, GET /refunds/{id}
// ---------------------------------------------------------------------------------------------------------------

/** The transport helpers of bank/server.ts this module's routes use. */
export interface RefundRouteContext {
  desk: RefundDesk;
  state: BankState;
  idempotencyKeyOf(req: IncomingMessage): string;
  readBody<T>(req: IncomingMessage, schema: z.ZodType<T>): Promise<T>;
  persist(): Promise<void>;
  sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void;
  fail(status: number, code: string, message: string, fields?: string[]): never;
}

const refundBodySchema = z
  .object({
    chargeId: z.string().regex(/^[\x21-\x7e]{1,200}$/, "must be 1..200 printable ASCII characters"),
    amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  })
  .strict();

/**
 * Answers the refund routes; returns false when `url` is not one of them (the server then answers 404/405).
 * `POST /refunds` answers 201 new, 200 repeat (`Idempotent-Replayed: true`), 404 `charge_not_found`, 409
 * `charge_not_refundable` or `charge_disputed`, 422 `refund_exceeds_charge` or `idempotency_key_reused` (+ `fields`), each only after
 * the state holds what it reports.
 */
export async function handleRefundRoute(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  ctx: RefundRouteContext,
): Promise<boolean> {
  const route = `${req.method} ${url.pathname}`;
  if (route === "POST /refunds") {
    const key = ctx.idempotencyKeyOf(req);
    const body = await ctx.readBody(req, refundBodySchema);
    const decision = ctx.desk.decide({ merchantRef: key, chargeId: body.chargeId, amount: body.amount });
    const view = decision.kind === "created" || decision.kind === "existing" ? publicRefund(decision.refund) : null;
    await ctx.persist();
    switch (decision.kind) {
      case "created":
        ctx.sendJson(res, 201, view);
        return true;
      case "existing":
        ctx.sendJson(res, 200, view, { "idempotent-replayed": "true" });
        return true;
      case "mismatch":
        return ctx.fail(
          422,
          "idempotency_key_reused",
          "this key already has a refund with other parameters",
          decision.fields,
        );
      case "no_charge":
        return ctx.fail(404, "charge_not_found", "no charge has this id");
      case "charge_not_refundable":
        return ctx.fail(
          409,
          "charge_not_refundable",
          `the charge is ${decision.status}; only succeeded charges are refunded`,
        );
      case "charge_disputed":
        return ctx.fail(
          409,
          "charge_disputed",
          `dispute ${decision.disputeId} on this charge is ${decision.disputeStatus}: the cardholder's money goes back through it, not a refund`,
        );
      case "exceeds_charge":
        return ctx.fail(
          422,
          "refund_exceeds_charge",
          `at most ${decision.refundableMinor} minor units of this charge are left to refund`,
        );
    }
  }
  if (route === "GET /refunds") {
    const chargeId = url.searchParams.get("chargeId");
    if (chargeId === null) ctx.fail(400, "invalid_request", "chargeId is required");
    const refunds = ctx.state.refundsByCharge.get(chargeId) ?? [];
    ctx.sendJson(res, 200, { refunds: refunds.map(publicRefund) });
    return true;
  }
  const one = /^\/refunds\/([^/]+)$/.exec(url.pathname);
  if (one && req.method === "GET") {
    const refund = ctx.state.refundsById.get(decodeURIComponent(one[1] as string));
    if (!refund) ctx.fail(404, "not_found", "no refund has this id");
    ctx.sendJson(res, 200, publicRefund(refund));
    return true;
  }
  if (url.pathname === "/refunds" || one)
    ctx.fail(405, "method_not_allowed", `${req.method} is not allowed on ${url.pathname}`);
  return false;
}
