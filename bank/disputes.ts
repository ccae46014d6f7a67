/**
 * Disputes in the sandbox bank (docs/bank-sandbox.md, "Disputes"): a cardholder disputes a succeeded charge, the
 * bank opens a dispute and later closes it `lost` (the money goes back to the cardholder: the merchant is charged
 * back) or `won` (the merchant keeps it). A dispute that was lost and is then reversed in the merchant's favour
 * ends `won` with `lostAt` kept, which is how a reversal is told from a dispute won outright.
 *
 * Every change of a dispute is one step of a plan decided when it opens (from the charge's refId prefix, or given
 * by the `/_sandbox/disputes` control), so a restart never changes what a dispute does; each step is persisted in
 * the state journal like a charge and announced by a webhook (`charge.disputed`, `charge.dispute_closed`). Each
 * change also takes the next number of the dispute sequence, which orders `GET /disputes?since=` (a dispute that
 * changes moves to the end of the listing, so a reader that remembers its cursor sees every change).
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { parseMerchantRef } from "../lib/bank/merchant-ref";
import type { BankState, ChargeRecord, EventType } from "./state";

/** How a dispute ends, step by step: `lost`, `won`, or `lost` then `won` (a reversal). */
export const DISPUTE_STEP = z.enum(["lost", "won"]);
export type DisputeStep = z.infer<typeof DISPUTE_STEP>;
export type DisputeStatus = "open" | DisputeStep;

/** The refId prefixes that open a dispute once the charge succeeds, longest first (the first match wins). */
export const DISPUTE_PREFIXES: ReadonlyArray<{ readonly prefix: string; readonly plan: readonly DisputeStep[] }> = [
  { prefix: "sbx-dispute-reversed-", plan: ["lost", "won"] },
  { prefix: "sbx-dispute-won-", plan: ["won"] },
  { prefix: "sbx-dispute-", plan: ["lost"] },
];

export const disputeSchema = z.object({
  id: z.string(),
  chargeId: z.string(),
  merchantRef: z.string(),
  amount: z.number().int(),
  currency: z.string(),
  status: z.enum(["open", "lost", "won"]),
  openedAt: z.string(),
  /** When the dispute was lost (kept when it is reversed later); null while it never was. */
  lostAt: z.string().nullable(),
  /** When it last closed (lost or won); null while open. */
  closedAt: z.string().nullable(),
  /** Steps still to come, and when the next one happens (epoch ms; null when none is left). */
  plan: z.array(DISPUTE_STEP),
  nextAtMs: z.number().nullable(),
  /** Position in the dispute sequence: raised on every change (the `since` listing's order). */
  seq: z.number().int().positive(),
  updatedAt: z.string(),
});
export type DisputeRecord = z.infer<typeof disputeSchema>;

/** The protocol's view of a dispute: what `GET /disputes` and `GET /disputes/{id}` answer. */
export interface PublicDispute {
  id: string;
  chargeId: string;
  merchantRef: string;
  amount: number;
  currency: string;
  status: DisputeStatus;
  openedAt: string;
  lostAt: string | null;
  closedAt: string | null;
  updatedAt: string;
}

export function publicDispute(d: DisputeRecord): PublicDispute {
  const { id, chargeId, merchantRef, amount, currency, status, openedAt, lostAt, closedAt, updatedAt } = d;
  return { id, chargeId, merchantRef, amount, currency, status, openedAt, lostAt, closedAt, updatedAt };
}

/**
 * True while a dispute keeps the charge's money on its way back to the cardholder: open, or lost and not reversed.
 * A refund of such a charge is refused (bank/refunds.ts), as card acquirers refuse one: the dispute, not a refund,
 * returns the money, so the two never return the same money twice.
 */
export function disputeHoldsCharge(dispute: Pick<DisputeRecord, "status">): boolean {
  return dispute.status === "open" || dispute.status === "lost";
}

/** Why {@link DisputeDesk.open} refused to open a dispute on a charge. */
export type DisputeRefusal =
  /** The charge already has a dispute: card networks allow one per charge. */
  | { readonly kind: "already_disputed"; readonly disputeId: string }
  /** Refunds that did not fail already return the whole charge: nothing is left to dispute. */
  | { readonly kind: "fully_refunded" };

/** Queues one webhook event about `charge` with `extra` fields in its `data` (the engine's delivery machinery). */
export type EmitEvent = (charge: ChargeRecord, type: EventType, extra: Record<string, unknown>, nowMs: number) => void;

/** The plan a charge's refId switches on, or null when none does. */
export function disputePlanFor(merchantRef: string): readonly DisputeStep[] | null {
  const refId = parseMerchantRef(merchantRef)?.refId ?? "";
  return DISPUTE_PREFIXES.find((p) => refId.startsWith(p.prefix))?.plan ?? null;
}

/** A dispute cursor for `since`: `dsq_<sequence number>` (opaque to clients). */
const CURSOR_PATTERN = /^dsq_([0-9]{1,15})$/;
const sinceTimeSchema = z.iso.datetime({ offset: true });

export type DisputeAnswer = { status: number; body: unknown };

/**
 * The bank's disputes: opening, stepping through their plan on the engine's timer, and the protocol's reads.
 * Single-threaded like the engine: every change is reported to the state before the next save.
 */
export class DisputeDesk {
  /** The disputes with a step still to take: the timer walks these, not every dispute ever opened. */
  private readonly stepping = new Set<DisputeRecord>();

  constructor(
    private readonly state: BankState,
    private readonly emit: EmitEvent,
    /** Time between a dispute's steps (the bank's BANK_WEBHOOK_DELAY_MS: "shortly after", like settlement). */
    private readonly stepDelayMs: number,
    /** Minor units of the charge's refunds that did not fail (bank/refunds.ts `RefundDesk.refundedMinor`). */
    private readonly refundedMinor: (chargeId: string) => number,
  ) {
    for (const d of state.disputes) if (d.nextAtMs !== null) this.stepping.add(d);
  }

  /** Called when a charge settles: opens the dispute its refId asks for (once: a settled charge never settles again). */
  onChargeSettled(charge: ChargeRecord, nowMs: number): void {
    const plan = disputePlanFor(charge.merchantRef);
    if (plan && charge.outcome === "succeeded") this.open(charge, plan, nowMs);
  }

  /**
   * Opens a dispute on `charge` (the caller checked it succeeded) that will take the steps of `plan`, one every
   * step delay, and queues its `charge.disputed` event; the caller saves. As at card networks, a charge has at most
   * one dispute, and the dispute covers only what was not refunded: the refunds that did not fail are the merchant's
   * evidence that that money already went back (pending ones count, like for a second refund's room). So a refund and
   * a dispute together never return more than the charge.
   *
   * Returns the dispute, or why none was opened (nothing changed).
   */
  open(
    charge: ChargeRecord,
    plan: readonly DisputeStep[],
    nowMs: number,
  ): { readonly kind: "opened"; readonly dispute: DisputeRecord } | DisputeRefusal {
    const earlier = this.state.disputesByCharge.get(charge.id);
    if (earlier) return { kind: "already_disputed", disputeId: earlier.id };
    const disputedMinor = charge.amount - this.refundedMinor(charge.id);
    if (disputedMinor <= 0) return { kind: "fully_refunded" };
    const dispute: DisputeRecord = {
      id: `dp_${randomBytes(12).toString("hex")}`,
      chargeId: charge.id,
      merchantRef: charge.merchantRef,
      amount: disputedMinor,
      currency: charge.currency,
      status: "open",
      openedAt: new Date(nowMs).toISOString(),
      lostAt: null,
      closedAt: null,
      plan: [...plan],
      nextAtMs: plan.length > 0 ? nowMs + this.stepDelayMs : null,
      seq: this.state.nextDisputeSeq(),
      updatedAt: new Date(nowMs).toISOString(),
    };
    this.state.addDispute(dispute);
    if (dispute.nextAtMs !== null) this.stepping.add(dispute);
    this.emit(charge, "charge.disputed", { disputeId: dispute.id, status: "open" }, nowMs);
    return { kind: "opened", dispute };
  }

  /** Epoch ms of the next due step, or Infinity. */
  nextDueMs(): number {
    let next = Infinity;
    for (const d of this.stepping) if (d.nextAtMs !== null) next = Math.min(next, d.nextAtMs);
    return next;
  }

  /** Takes every due step; returns true when something changed (the caller saves). */
  advance(nowMs: number): boolean {
    let changed = false;
    for (const d of this.stepping) {
      if (d.nextAtMs === null || d.nextAtMs > nowMs) continue;
      const step = d.plan.shift();
      if (step === undefined) {
        d.nextAtMs = null;
        this.stepping.delete(d);
        continue;
      }
      const iso = new Date(nowMs).toISOString();
      d.status = step;
      d.closedAt = iso;
      if (step === "lost") d.lostAt = iso;
      d.nextAtMs = d.plan.length > 0 ? nowMs + this.stepDelayMs : null;
      if (d.nextAtMs === null) this.stepping.delete(d);
      d.seq = this.state.nextDisputeSeq();
      d.updatedAt = iso;
      this.state.disputeChanged(d);
      const charge = this.state.chargesById.get(d.chargeId);
      if (charge) this.emit(charge, "charge.dispute_closed", { disputeId: d.id, outcome: step }, nowMs);
      changed = true;
    }
    return changed;
  }

  /**
   * `GET /disputes?since=<ISO time | cursor>[&limit=N]` and `GET /disputes/{id}`; null for other paths.
   * A page lists disputes in sequence order: with a time, those changed at or after it; with a cursor (the
   * `nextCursor` of an earlier page), those changed after it. `nextCursor` resumes after the page's last dispute.
   */
  answer(method: string | undefined, url: URL, limit: (raw: string | null) => number): DisputeAnswer | null {
    if (url.pathname !== "/disputes" && !url.pathname.startsWith("/disputes/")) return null;
    if (method !== "GET") return error(405, "method_not_allowed", `${method} is not allowed on ${url.pathname}`);
    if (url.pathname.startsWith("/disputes/")) {
      const dispute = this.state.disputesById.get(url.pathname.slice("/disputes/".length));
      return dispute
        ? { status: 200, body: publicDispute(dispute) }
        : error(404, "not_found", "no dispute with this id");
    }
    const since = url.searchParams.get("since");
    if (since === null) return error(400, "invalid_request", "since (an ISO time or a cursor) is required");
    const cursor = CURSOR_PATTERN.exec(since);
    let after: (d: DisputeRecord) => boolean;
    if (cursor) {
      const seq = Number(cursor[1]);
      after = (d) => d.seq > seq;
    } else if (sinceTimeSchema.safeParse(since).success) {
      const sinceMs = Date.parse(since);
      after = (d) => Date.parse(d.updatedAt) >= sinceMs;
    } else {
      return error(400, "invalid_request", "since must be an ISO-8601 time with offset or a cursor from nextCursor");
    }
    const pageSize = limit(url.searchParams.get("limit"));
    const matching = this.state.disputes.filter(after).sort((a, b) => a.seq - b.seq);
    const page = matching.slice(0, pageSize);
    const last = page.at(-1);
    return {
      status: 200,
      body: {
        disputes: page.map(publicDispute),
        hasMore: matching.length > page.length,
        nextCursor: last ? `dsq_${last.seq}` : cursor ? since : `dsq_${this.state.lastDisputeSeq()}`,
      },
    };
  }
}

function error(status: number, code: string, message: string): DisputeAnswer {
  return { status, body: { error: { code, message } } };
}

/**
 * The plans a dispute can follow, as card networks run them: it stays open (`[]`), is lost, is won, or is lost and
 * then reversed in the merchant's favour (`["lost", "won"]`). A dispute never moves back to lost once won.
 */
const REALISTIC_PLANS = ["", "lost", "won", "lost,won"];

/** `POST /_sandbox/disputes` body: dispute a succeeded charge with the given plan (default: lost; `[]`: stays open). */
export const openDisputeBodySchema = z
  .object({
    chargeId: z.string().min(1).max(200),
    plan: z
      .array(DISPUTE_STEP)
      .refine((plan) => REALISTIC_PLANS.includes(plan.join(",")), "one of [], [lost], [won], [lost, won]")
      .optional(),
  })
  .strict();
