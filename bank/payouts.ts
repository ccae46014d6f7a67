/**
 * The sandbox bank's payouts (docs/bank-sandbox.md "Payouts"): money the merchant sends to a bank account, at most
 * one payout per Idempotency-Key (the merchant reference `payout:<userId>:<refId>`). A payout is `pending` when
 * made, settles `BANK_WEBHOOK_DELAY_MS` later as `paid` or `failed`, and a paid payout may be `returned` later by
 * the receiving bank (`BANK_PAYOUT_RETURN_DELAY_MS` after it was paid), each change announced by a signed webhook
 * (`payout.paid`, `payout.failed`, `payout.returned`) delivered and retried like a charge's.
 *
 * Decisions are synchronous, like charges' (one Node thread: the key lookup and insert cannot interleave). A
 * payout's faults are decided when it is made and stored with it, so a restart or a repeat never changes what it
 * does; every change is reported to the state (journal and snapshot) and takes the next number of the payout
 * sequence, which orders `GET /payouts?since=`.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { z } from "zod";
import { isSandboxAccountNumber } from "../lib/bank/payouts-client";
import type { BankConfig, PayoutFaultRates } from "./config";
import {
  decidePayoutFaults,
  PAYOUT_DUPLICATE_COPIES,
  payoutUnavailableSwitch,
  type PayoutFaults,
  type Random,
} from "./faults";
import type { BankState } from "./state";

export const PAYOUT_EVENT_TYPES = ["payout.paid", "payout.failed", "payout.returned"] as const;
export type PayoutEventType = (typeof PAYOUT_EVENT_TYPES)[number];
export type PayoutStatus = "pending" | "paid" | "failed" | "returned";

/** The reason a failed payout gives (the fail switch or rate): the receiving bank refused the transfer. */
export const PAYOUT_FAILURE_REASON = "insufficient_funds_at_bank";
/** The reason a returned payout gives (the return and reorder switches): the receiving account no longer exists. */
export const PAYOUT_RETURN_REASON = "account_closed";

const payoutFaultsSchema = z.object({
  fail: z.boolean(),
  slow: z.boolean(),
  lost: z.boolean(),
  dup: z.boolean(),
  reorder: z.boolean(),
  returns: z.boolean(),
  nohook: z.boolean(),
}) satisfies z.ZodType<PayoutFaults>;

export const payoutRecordSchema = z.object({
  id: z.string(),
  /** The Idempotency-Key it was made with. */
  merchantRef: z.string(),
  /** Minor units, positive. */
  amount: z.number().int(),
  currency: z.string(),
  /** A sandbox account number (lib/bank/payouts-client.ts `isSandboxAccountNumber`). */
  destination: z.string(),
  status: z.enum(["pending", "paid", "failed", "returned"]),
  createdAt: z.string(),
  /** When it last changed (made, settled, returned): the `since` listing's time. */
  updatedAt: z.string(),
  settledAt: z.string().optional(),
  returnedAt: z.string().optional(),
  failureReason: z.string().optional(),
  returnId: z.string().optional(),
  returnReason: z.string().optional(),
  /** How it settles, decided when it is made. */
  outcome: z.enum(["paid", "failed"]),
  faults: payoutFaultsSchema,
  /** Epoch ms of its next step (settling while pending, the return while paid and returning); null when none. */
  nextAtMs: z.number().nullable(),
  /** Position in the payout sequence: raised on every change (the `since` listing's order). */
  seq: z.number().int().positive(),
});
export type PayoutRecord = z.infer<typeof payoutRecordSchema>;

/** The protocol's view of a payout: what POST/GET /payouts answer. Absent optional fields are not sent. */
export interface PublicPayout {
  id: string;
  merchantRef: string;
  amount: number;
  currency: string;
  destination: string;
  status: PayoutStatus;
  createdAt: string;
  updatedAt: string;
  settledAt?: string;
  returnedAt?: string;
  failureReason?: string;
  returnId?: string;
  returnReason?: string;
}

export function publicPayout(p: PayoutRecord): PublicPayout {
  const { id, merchantRef, amount, currency, destination, status, createdAt, updatedAt } = p;
  return {
    id,
    merchantRef,
    amount,
    currency,
    destination,
    status,
    createdAt,
    updatedAt,
    ...(p.settledAt !== undefined ? { settledAt: p.settledAt } : {}),
    ...(p.returnedAt !== undefined ? { returnedAt: p.returnedAt } : {}),
    ...(p.failureReason !== undefined ? { failureReason: p.failureReason } : {}),
    ...(p.returnId !== undefined ? { returnId: p.returnId } : {}),
    ...(p.returnReason !== undefined ? { returnReason: p.returnReason } : {}),
  };
}

export interface PayoutRequest {
  merchantRef: string;
  /** Minor units. */
  amount: number;
  currency: string;
  destination: string;
}

type PayoutField = "amount" | "currency" | "destination";
export type PayoutDecision =
  | { kind: "created"; payout: PayoutRecord }
  | { kind: "existing"; payout: PayoutRecord }
  | { kind: "mismatch"; payout: PayoutRecord; fields: PayoutField[] };

/** What the desk needs from the engine: queue an event's deliveries (returns its event id), and re-arm the timer. */
export interface PayoutDeskHooks {
  queueDelivery(event: {
    type: PayoutEventType;
    payoutId: string;
    merchantRef: string;
    data: Record<string, unknown>;
    copies: number;
    createdIso: string;
    nowMs: number;
    /** An event id whose deliveries must all finish before these are attempted. */
    after?: string;
  }): string;
  schedule(): void;
}

/** A payout cursor for `since`: `psq_<sequence number>` (opaque to clients). */
const CURSOR_PATTERN = /^psq_([0-9]{1,15})$/;
const sinceTimeSchema = z.iso.datetime({ offset: true });

/** Payouts' decisions, settlement and returns; owned by the engine (its timer calls {@link advance}). */
export class PayoutDesk {
  /** Current payout fault rates; start from the configuration, changeable at run time (`/_sandbox/faults`). */
  faultRates: PayoutFaultRates;
  /** The payouts with a step still to take: the timer walks these, not every payout ever made. */
  private readonly stepping = new Set<PayoutRecord>();

  constructor(
    private readonly config: BankConfig,
    private readonly state: BankState,
    private readonly logger: Logger,
    private readonly random: Random,
    private readonly hooks: PayoutDeskHooks,
  ) {
    this.faultRates = { ...config.payoutFaultRates };
    for (const p of state.payouts) if (p.nextAtMs !== null) this.stepping.add(p);
  }

  /**
   * Decides a payout request (the caller has checked the destination). Synchronous, so two requests with one key
   * can never both create: the map insert below is the claim. The caller saves the state before answering.
   *
   * @returns `existing` (a repeat with the same amount, currency and destination), `mismatch` (same key, other
   *   parameters: 422 with the fields), or `created`.
   */
  decide(request: PayoutRequest): PayoutDecision {
    const existing = this.state.payoutsByRef.get(request.merchantRef);
    if (existing) {
      const fields: PayoutField[] = [];
      if (existing.amount !== request.amount) fields.push("amount");
      if (existing.currency !== request.currency) fields.push("currency");
      if (existing.destination !== request.destination) fields.push("destination");
      return fields.length > 0
        ? { kind: "mismatch", payout: existing, fields }
        : { kind: "existing", payout: existing };
    }
    const now = Date.now();
    const iso = new Date(now).toISOString();
    const faults = decidePayoutFaults(request.merchantRef, this.faultRates, this.random);
    const payout: PayoutRecord = {
      id: `po_${randomBytes(12).toString("hex")}`,
      merchantRef: request.merchantRef,
      amount: request.amount,
      currency: request.currency,
      destination: request.destination,
      status: "pending",
      createdAt: iso,
      updatedAt: iso,
      outcome: faults.fail ? "failed" : "paid",
      faults,
      nextAtMs: now + this.config.webhookDelayMs,
      seq: this.state.nextPayoutSeq(),
    };
    // The claim: the key was free a few lines above and nothing can run in between (single thread, no await).
    this.state.addPayout(payout);
    this.stepping.add(payout);
    this.logger.info({ payoutId: payout.id, merchantRef: payout.merchantRef, faults }, "payout created");
    this.hooks.schedule();
    return { kind: "created", payout };
  }

  /** Epoch ms of the next due step, or Infinity. */
  nextDueMs(): number {
    let next = Infinity;
    for (const p of this.stepping) if (p.nextAtMs !== null) next = Math.min(next, p.nextAtMs);
    return next;
  }

  /** Takes every due step (settle, return) and queues its webhooks; returns true when something changed. */
  advance(nowMs: number): boolean {
    let changed = false;
    for (const p of [...this.stepping]) {
      if (p.nextAtMs === null || p.nextAtMs > nowMs) continue;
      if (p.status === "pending") this.settle(p, nowMs);
      else if (p.status === "paid") this.returnPayout(p, nowMs);
      else {
        // A final payout has no step left (never written so; kept safe for hand-edited state files).
        this.stepping.delete(p);
        continue;
      }
      if (p.nextAtMs === null) this.stepping.delete(p);
      p.seq = this.state.nextPayoutSeq();
      p.updatedAt = new Date(nowMs).toISOString();
      this.state.payoutChanged(p);
      changed = true;
    }
    return changed;
  }

  /** Whether a paid payout is later returned: the return switch, or the reorder switch (which needs two events). */
  private returns(p: PayoutRecord): boolean {
    return p.outcome === "paid" && (p.faults.returns || p.faults.reorder);
  }

  private settle(p: PayoutRecord, nowMs: number): void {
    const iso = new Date(nowMs).toISOString();
    p.status = p.outcome;
    p.settledAt = iso;
    if (p.outcome === "failed") p.failureReason = PAYOUT_FAILURE_REASON;
    p.nextAtMs = this.returns(p) ? nowMs + this.config.payoutReturnDelayMs : null;
    this.logger.info({ payoutId: p.id, status: p.status }, "payout settled");
    // The reorder switch holds `payout.paid` back until the return, which is then delivered first.
    if (p.faults.reorder && this.returns(p)) return;
    this.emit(p, p.outcome === "paid" ? "payout.paid" : "payout.failed", iso, nowMs);
  }

  private returnPayout(p: PayoutRecord, nowMs: number): void {
    const iso = new Date(nowMs).toISOString();
    p.status = "returned";
    p.returnedAt = iso;
    p.returnId = `pr_${randomBytes(12).toString("hex")}`;
    p.returnReason = PAYOUT_RETURN_REASON;
    p.nextAtMs = null;
    this.logger.info({ payoutId: p.id, returnId: p.returnId }, "payout returned");
    const returnedEventId = this.emit(p, "payout.returned", iso, nowMs);
    // The reorder switch: the old `payout.paid`, dated when the payout was paid, goes after the return's
    // deliveries have finished (answered 2xx or given up), so the app sees the return before the payment.
    if (p.faults.reorder && returnedEventId !== null)
      this.emit(p, "payout.paid", p.settledAt ?? iso, nowMs, returnedEventId);
  }

  /** Queues an event about `p` (none with the no-webhook switch); returns its id, or null when none was queued. */
  private emit(p: PayoutRecord, type: PayoutEventType, createdIso: string, nowMs: number, after?: string) {
    if (p.faults.nohook) return null;
    const status = type.slice("payout.".length);
    const data = {
      payoutId: p.id,
      merchantRef: p.merchantRef,
      amount: p.amount,
      currency: p.currency,
      status,
      ...(type === "payout.failed" ? { failureReason: p.failureReason } : {}),
      ...(type === "payout.returned" ? { returnId: p.returnId, returnReason: p.returnReason } : {}),
    };
    const copies = p.faults.dup ? PAYOUT_DUPLICATE_COPIES : 1;
    return this.hooks.queueDelivery({
      type,
      payoutId: p.id,
      merchantRef: p.merchantRef,
      data,
      copies,
      createdIso,
      nowMs,
      after,
    });
  }

  /**
   * `GET /payouts?since=<ISO time | cursor>[&limit=N]`: a page in sequence order. With a time, the payouts changed
   * (or made) at or after it; with a cursor (an earlier page's `nextCursor`), those changed after it.
   *
   * @returns the page, or null when `since` is neither (the caller answers 400).
   */
  listSince(since: string, pageSize: number): { payouts: PublicPayout[]; hasMore: boolean; nextCursor: string } | null {
    const cursor = CURSOR_PATTERN.exec(since);
    let after: (p: PayoutRecord) => boolean;
    if (cursor) {
      const seq = Number(cursor[1]);
      after = (p) => p.seq > seq;
    } else if (sinceTimeSchema.safeParse(since).success) {
      const sinceMs = Date.parse(since);
      after = (p) => Date.parse(p.updatedAt) >= sinceMs;
    } else {
      return null;
    }
    const matching = this.state.payouts.filter(after).sort((a, b) => a.seq - b.seq);
    const page = matching.slice(0, pageSize);
    const last = page.at(-1);
    return {
      payouts: page.map(publicPayout),
      hasMore: matching.length > page.length,
      nextCursor: last ? `psq_${last.seq}` : cursor ? since : `psq_${this.state.lastPayoutSeq()}`,
    };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP: POST /payouts, GET /payouts?merchantRef= | ?since=, GET /payouts/{id}
// ---------------------------------------------------------------------------------------------------------------

/** The transport helpers of bank/server.ts this module's routes use. */
export interface PayoutRouteContext {
  desk: PayoutDesk;
  state: BankState;
  idempotencyKeyOf(req: IncomingMessage): string;
  readBody<T>(req: IncomingMessage, schema: z.ZodType<T>): Promise<T>;
  persist(): Promise<void>;
  sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void;
  /** Sends the answer after `BANK_SLOW_MS` (dropped on shutdown), as the charges' slow switch does. */
  sendSlowly(res: ServerResponse, status: number, body: unknown): void;
  pageLimit(raw: string | null): number;
  fail(status: number, code: string, message: string, fields?: string[]): never;
}

const payoutBodySchema = z
  .object({
    merchantRef: z.string().regex(/^[\x21-\x7e]{1,400}$/, "must be 1..400 printable ASCII characters"),
    // Minor units; 2^53 - 1 is the largest integer JSON and JavaScript agree on exactly.
    amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    currency: z.string().regex(/^[A-Z]{3}$/, "must be an ISO 4217 alphabetic code"),
    // Checked as an account number after the shape (422 invalid_destination); 100 characters bounds the echo.
    destination: z.string().max(100),
  })
  .strict();

/**
 * Answers the payout routes; returns false when `url` is not one of them. `POST /payouts` answers 201 new, 200
 * repeat (`Idempotent-Replayed: true`), 422 `invalid_destination` or `idempotency_key_reused` (+ `fields`), 503
 * with the `sbx-po-5xx-` switch (nothing made), each only after the state holds what it reports.
 */
export async function handlePayoutRoute(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  ctx: PayoutRouteContext,
): Promise<boolean> {
  const route = `${req.method} ${url.pathname}`;
  if (route === "POST /payouts") {
    await postPayout(req, res, ctx);
    return true;
  }
  if (route === "GET /payouts") {
    getPayouts(url, res, ctx);
    return true;
  }
  const one = /^\/payouts\/([^/]+)$/.exec(url.pathname);
  if (one && req.method === "GET") {
    const payout = ctx.state.payoutsById.get(decodeURIComponent(one[1] as string));
    if (!payout) ctx.fail(404, "not_found", "no payout has this id");
    ctx.sendJson(res, 200, publicPayout(payout));
    return true;
  }
  if (url.pathname === "/payouts" || one)
    ctx.fail(405, "method_not_allowed", `${req.method} is not allowed on ${url.pathname}`);
  return false;
}

async function postPayout(req: IncomingMessage, res: ServerResponse, ctx: PayoutRouteContext): Promise<void> {
  const key = ctx.idempotencyKeyOf(req);
  const body = await ctx.readBody(req, payoutBodySchema);
  if (body.merchantRef !== key) ctx.fail(400, "invalid_request", "Idempotency-Key must equal merchantRef");
  if (payoutUnavailableSwitch(key)) ctx.fail(503, "unavailable", "the bank is unavailable; nothing was made");
  if (!isSandboxAccountNumber(body.destination))
    ctx.fail(422, "invalid_destination", "destination must be 10 digits, the last the Luhn check digit of the first 9");
  const decision = ctx.desk.decide(body);
  // The answer describes the payout as it was decided (pending), even if it settles while the state is written.
  const view = decision.kind === "mismatch" ? null : publicPayout(decision.payout);
  // Durable before acknowledged, for every outcome: a repeat may arrive while the creator's write is in flight.
  await ctx.persist();
  if (decision.kind === "mismatch")
    ctx.fail(422, "idempotency_key_reused", "this key already has a payout with other parameters", decision.fields);
  if (decision.kind === "existing") {
    // Transport faults hit only the request that made the payout; a repeat is answered at once (how clients recover).
    ctx.sendJson(res, 200, view, { "idempotent-replayed": "true" });
    return;
  }
  if (decision.payout.faults.lost) {
    // The payout is made and stored; the reply is dropped.
    req.socket.destroy();
    return;
  }
  if (decision.payout.faults.slow) ctx.sendSlowly(res, 201, view);
  else ctx.sendJson(res, 201, view);
}

function getPayouts(url: URL, res: ServerResponse, ctx: PayoutRouteContext): void {
  const merchantRef = url.searchParams.get("merchantRef");
  const since = url.searchParams.get("since");
  if ((merchantRef === null) === (since === null))
    ctx.fail(400, "invalid_request", "give exactly one of merchantRef and since");
  if (merchantRef !== null) {
    const payout = ctx.state.payoutsByRef.get(merchantRef);
    if (!payout) ctx.fail(404, "not_found", "no payout for this merchant reference");
    ctx.sendJson(res, 200, publicPayout(payout));
    return;
  }
  const page = ctx.desk.listSince(since as string, ctx.pageLimit(url.searchParams.get("limit")));
  if (!page) ctx.fail(400, "invalid_request", "since must be an ISO-8601 time with offset or a cursor from nextCursor");
  ctx.sendJson(res, 200, page);
}
