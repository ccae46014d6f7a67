/**
 * The sandbox bank's behaviour, independent of HTTP: deciding charges (at most one per merchant reference),
 * cancelling keys, settling charges when due, and delivering their webhooks at least once with back-off
 * (contract section 5). One timer drives everything: it wakes at the earliest due settlement or delivery
 * attempt, so nothing polls.
 */
import { randomFillSync } from "node:crypto";
import type { Logger } from "pino";
import { signWebhook, SIGNATURE_HEADER } from "../lib/bank/signature";
import type { BankConfig, FaultRates } from "./config";
import { DisputeDesk } from "./disputes";
import { decideFaults, DUPLICATE_COPIES, retryDelayMs, type Random } from "./faults";
import { PayoutDesk } from "./payouts";
import { RefundDesk } from "./refunds";
import type { AttemptRecord, BankState, ChargeRecord, DeliveryRecord, EventType } from "./state";
import { AttemptCancel, WebhookPoster, WebhookTimeoutError } from "./webhook-post";

/** The protocol's view of a charge (contract section 5): what POST/GET /charges answer. */
export interface PublicCharge {
  id: string;
  status: ChargeRecord["status"];
  merchantRef: string;
  amount: number;
  currency: string;
  createdAt: string;
}

export interface ChargeRequest {
  merchantRef: string;
  /** Minor units. */
  amount: number;
  currency: string;
}

export type ChargeDecision =
  | { kind: "created"; charge: ChargeRecord }
  | { kind: "existing"; charge: ChargeRecord }
  | { kind: "mismatch"; charge: ChargeRecord; fields: Array<"amount" | "currency"> }
  | { kind: "cancelled" };

export type CancelDecision = { cancelled: true; charge: null } | { cancelled: false; charge: ChargeRecord };

/** setTimeout's largest delay (2^31 - 1 ms, about 24.8 days); longer waits are re-armed when they fire. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** The app's answer kept per attempt: 512 characters shows an error body without bloating the state file. */
const RESPONSE_EXCERPT_CHARS = 512;

/** 12 random bytes (96 bits) per id: collisions are out of reach for any number of sandbox charges. */
const ID_BYTES = 12;
/** Random bytes drawn 4 KiB at a time (341 ids per draw) rather than one system call per id. */
const idPool = Buffer.alloc(ID_BYTES * 341);
let idPoolOffset = idPool.length;

function newId(prefix: string): string {
  if (idPoolOffset + ID_BYTES > idPool.length) {
    randomFillSync(idPool);
    idPoolOffset = 0;
  }
  const hex = idPool.toString("hex", idPoolOffset, idPoolOffset + ID_BYTES);
  idPoolOffset += ID_BYTES;
  return `${prefix}_${hex}`;
}

/** The protocol's view of a stored charge. */
export function publicCharge(charge: ChargeRecord): PublicCharge {
  const { id, status, merchantRef, amount, currency, createdAt } = charge;
  return { id, status, merchantRef, amount, currency, createdAt };
}

export interface BankEngineOptions {
  config: BankConfig;
  state: BankState;
  logger: Logger;
  /** Draw source for faults and jitter (seeded when `BANK_FAULT_SEED` is set). */
  random: Random;
}

export class BankEngine {
  /** Current global fault rates; start from the configuration, changeable at run time (`/_sandbox/faults`). */
  faultRates: FaultRates;
  /** Refunds (bank/refunds.ts): settled by this engine's timer, their webhooks delivered like charges'. */
  readonly refunds: RefundDesk;
  /** Disputes on succeeded charges (bank/disputes.ts); their steps run on this engine's timer. */
  readonly disputes: DisputeDesk;
  /** Payouts (bank/payouts.ts): settled and returned by this engine's timer, their webhooks delivered like charges'. */
  readonly payouts: PayoutDesk;
  private paused = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** Epoch ms at which the armed timer fires. */
  private timerDueMs = Infinity;
  private readonly unsettled = new Set<ChargeRecord>();
  private readonly inFlight = new Map<string, { cancel: AttemptCancel; done: Promise<void> }>();
  private readonly config: BankConfig;
  private readonly state: BankState;
  private readonly logger: Logger;
  private readonly random: Random;
  private readonly poster: WebhookPoster;

  constructor(options: BankEngineOptions) {
    this.config = options.config;
    this.state = options.state;
    this.logger = options.logger;
    this.random = options.random;
    this.faultRates = { ...options.config.faultRates };
    this.poster = new WebhookPoster(this.config.webhookUrl, this.config.deliveryConcurrency);
    for (const charge of this.state.charges) if (!charge.settled) this.unsettled.add(charge);
    this.refunds = new RefundDesk(this.config, this.state, this.logger, {
      queueDelivery: (event) => {
        this.queueDelivery(
          event.type,
          event.chargeId,
          event.merchantRef,
          event.data,
          1,
          new Date(event.nowMs).toISOString(),
          event.nowMs,
        );
      },
      schedule: () => this.schedule(),
    });
    this.disputes = new DisputeDesk(
      this.state,
      (charge, type, extra, nowMs) => {
        // The no-webhook switch covers a charge's disputes too: only `GET /disputes` tells about them.
        if (!charge.faults.nohook)
          this.queueEvent(charge, type, new Date(nowMs).toISOString(), nowMs, undefined, extra);
        // Every change of a dispute is announced here, sent or not: the timer is armed for its next step either way,
        // so a dispute opened by `POST /_sandbox/disputes` on a charge with the no-webhook switch steps on time
        // instead of waiting for unrelated traffic to wake the timer. Armed once the desk has finished the change
        // (a microtask later), so the dispute's next due time is recorded whatever order the desk writes it in.
        queueMicrotask(() => this.schedule());
      },
      this.config.webhookDelayMs,
      (chargeId) => this.refunds.refundedMinor(chargeId),
    );
    this.payouts = new PayoutDesk(this.config, this.state, this.logger, this.random, {
      // A payout's deliveries carry its payout id where a charge's carry the charge id.
      queueDelivery: (event) =>
        this.queueDelivery(
          event.type,
          event.payoutId,
          event.merchantRef,
          event.data,
          event.copies,
          event.createdIso,
          event.nowMs,
          event.after,
        ),
      schedule: () => this.schedule(),
    });
  }

  /** Starts the timer: overdue settlements and pending deliveries (for example after a restart) run at once. */
  start(): void {
    this.stopped = false;
    this.schedule();
  }

  /**
   * Stops the timer and aborts attempts in flight. An aborted attempt is not recorded: its delivery stays
   * pending and is sent again after a restart (at-least-once). Resolves after a final save.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const { cancel } of this.inFlight.values()) cancel.cancel();
    await Promise.all([...this.inFlight.values()].map((f) => f.done));
    this.poster.close();
    await this.state.save();
  }

  get webhooksPaused(): boolean {
    return this.paused;
  }

  /** Holds webhook delivery (settlement continues); deliveries pile up as pending. Not persisted. */
  pauseWebhooks(): void {
    this.paused = true;
    this.schedule();
  }

  /** Resumes webhook delivery. */
  resumeWebhooks(): void {
    this.paused = false;
    this.schedule();
  }

  /** Makes every pending delivery due now (skips the rest of its back-off). Returns how many. */
  retryNow(): number {
    const now = Date.now();
    let count = 0;
    for (const d of this.state.pendingDeliveries) {
      d.nextAttemptAtMs = now;
      this.state.deliveryChanged(d);
      count++;
    }
    this.schedule();
    return count;
  }

  /** Number of deliveries not yet delivered or given up. */
  pendingDeliveryCount(): number {
    return this.state.pendingDeliveries.size;
  }

  /**
   * Decides a charge request (contract section 5). Synchronous, so two requests with one key can never both
   * create: Node runs this whole function without interleaving, and the map insert below is the claim.
   * The caller must `await state.save()` before answering, so an acknowledged charge or refusal survives a crash.
   *
   * @returns `cancelled` (the key was cancelled: 409), `mismatch` (same key, other amount or currency: 422),
   *   `existing` (a repeat: the same charge), or `created`.
   */
  decideCharge(request: ChargeRequest): ChargeDecision {
    if (this.state.cancelledKeys.has(request.merchantRef)) return { kind: "cancelled" };
    const existing = this.state.chargesByRef.get(request.merchantRef);
    if (existing) {
      const fields: Array<"amount" | "currency"> = [];
      if (existing.amount !== request.amount) fields.push("amount");
      if (existing.currency !== request.currency) fields.push("currency");
      return fields.length > 0
        ? { kind: "mismatch", charge: existing, fields }
        : { kind: "existing", charge: existing };
    }
    const now = Date.now();
    const faults = decideFaults(request.merchantRef, this.faultRates, this.random);
    const outcome = faults.decline ? "declined" : "succeeded";
    const charge: ChargeRecord = {
      id: newId("ch"),
      merchantRef: request.merchantRef,
      amount: request.amount,
      currency: request.currency,
      createdAt: new Date(now).toISOString(),
      // Like real providers, a success is reported asynchronously (pending now, webhook later) unless
      // BANK_SYNC_SUCCESS is set; a decline is known at once.
      status: outcome === "declined" ? "declined" : this.config.syncSuccess ? "succeeded" : "pending",
      outcome,
      faults,
      settleAtMs: now + this.config.webhookDelayMs,
      settled: false,
      staleFailureQueued: false,
    };
    // The claim: the key was free a few lines above and nothing can run in between (single thread, no await).
    this.state.addCharge(charge);
    this.unsettled.add(charge);
    this.logger.info({ chargeId: charge.id, merchantRef: charge.merchantRef, faults }, "charge created");
    this.schedule();
    return { kind: "created", charge };
  }

  /**
   * Cancels a key (contract section 5): when no charge exists, the key becomes unusable for good; when one exists,
   * nothing changes and the charge is reported. Synchronous for the same reason as {@link decideCharge}; the
   * caller saves before answering.
   */
  cancelKey(merchantRef: string): CancelDecision {
    const existing = this.state.chargesByRef.get(merchantRef);
    if (existing) return { cancelled: false, charge: existing };
    this.state.cancelKey(merchantRef);
    return { cancelled: true, charge: null };
  }

  private saveInBackground(): void {
    this.state.save().catch((error: unknown) => this.logger.error({ err: error }, "state not saved"));
  }

  private schedule(): void {
    if (this.stopped) return;
    // A timer armed for now (or earlier) or for a time no later than anything below stays: waking early is
    // harmless (tick() does what is due and schedules again), and the scan and re-arming on every charge and every
    // attempt were a tenth of the bank's CPU per charge under load.
    const now = Date.now();
    if (this.timer && this.timerDueMs <= now) return;
    let nextMs = Infinity;
    for (const charge of this.unsettled) nextMs = Math.min(nextMs, charge.settleAtMs);
    nextMs = Math.min(nextMs, this.refunds.nextSettleAtMs());
    nextMs = Math.min(nextMs, this.disputes.nextDueMs());
    nextMs = Math.min(nextMs, this.payouts.nextDueMs());
    // With every delivery slot busy, a finishing attempt calls schedule() again; counting due deliveries
    // here would spin the timer at 0 ms.
    if (!this.paused && this.inFlight.size < this.config.deliveryConcurrency) {
      for (const d of this.state.pendingDeliveries) {
        if (!this.inFlight.has(d.id) && !this.held(d)) nextMs = Math.min(nextMs, d.nextAttemptAtMs);
      }
    }
    if (this.timer && this.timerDueMs <= nextMs) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (nextMs === Infinity) return;
    const delayMs = Math.min(Math.max(nextMs - now, 0), MAX_TIMER_MS);
    this.timerDueMs = now + delayMs;
    this.timer = setTimeout(() => this.tick(), delayMs);
  }

  private tick(): void {
    this.timer = undefined;
    if (this.stopped) return;
    const now = Date.now();
    let changed = false;
    for (const charge of [...this.unsettled]) {
      if (charge.settleAtMs <= now) {
        this.settle(charge, now);
        this.disputes.onChargeSettled(charge, now);
        changed = true;
      }
    }
    if (this.refunds.settleDue(now)) changed = true;
    if (this.disputes.advance(now)) changed = true;
    if (this.payouts.advance(now)) changed = true;
    if (!this.paused) {
      const due = [...this.state.pendingDeliveries]
        .filter((d) => !this.inFlight.has(d.id) && d.nextAttemptAtMs <= now && !this.held(d))
        .sort((a, b) => a.nextAttemptAtMs - b.nextAttemptAtMs);
      for (const delivery of due) {
        if (this.inFlight.size >= this.config.deliveryConcurrency) break;
        this.dispatch(delivery);
      }
    }
    if (changed) this.saveInBackground();
    this.schedule();
  }

  private settle(charge: ChargeRecord, nowMs: number): void {
    charge.status = charge.outcome;
    charge.settled = true;
    this.state.chargeChanged(charge);
    this.unsettled.delete(charge);
    this.logger.info({ chargeId: charge.id, status: charge.status }, "charge settled");
    if (charge.faults.nohook) return; // contract section 5: no webhook; only the reconciler can learn the outcome
    const type: EventType = charge.outcome === "succeeded" ? "charge.succeeded" : "charge.failed";
    if (type === "charge.succeeded" && charge.faults.reorder) {
      // The reorder switch (case C14): a stale `charge.failed`, dated at the charge's creation as a late old event
      // would be, goes first; the success is held back until that failure's delivery has finished (answered 2xx
      // or given up), so the app sees the failure while the row is still waiting for the bank's word.
      const staleEventId = this.queueEvent(charge, "charge.failed", charge.createdAt, nowMs);
      charge.staleFailureQueued = true;
      this.state.chargeChanged(charge);
      this.queueEvent(charge, type, new Date(nowMs).toISOString(), nowMs, staleEventId);
      return;
    }
    this.queueEvent(charge, type, new Date(nowMs).toISOString(), nowMs);
  }

  /** Queues the deliveries of a new event (3 copies with the duplicate switch); returns the event id. */
  private queueEvent(
    charge: ChargeRecord,
    type: EventType,
    createdIso: string,
    nowMs: number,
    after?: string,
    extra: Record<string, unknown> = {},
  ): string {
    const data = {
      chargeId: charge.id,
      merchantRef: charge.merchantRef,
      amount: charge.amount,
      currency: charge.currency,
      ...extra,
    };
    const copies = charge.faults.dup ? DUPLICATE_COPIES : 1;
    return this.queueDelivery(type, charge.id, charge.merchantRef, data, copies, createdIso, nowMs, after);
  }

  /**
   * Queues `copies` deliveries of one new event with `data` (charges', refunds' and payouts' alike); returns the
   * event id. `chargeId` is what the deliveries list shows as the event's subject (a payout's id for payouts).
   */
  private queueDelivery(
    type: EventType,
    chargeId: string,
    merchantRef: string,
    data: Record<string, unknown>,
    copies: number,
    createdIso: string,
    nowMs: number,
    after?: string,
  ): string {
    const eventId = newId("evt");
    // Serialised once: every copy and every retry of this event sends these exact bytes.
    const body = JSON.stringify({ id: eventId, type, created: createdIso, data });
    for (let copy = 1; copy <= copies; copy++) {
      this.state.addDelivery({
        id: newId("dlv"),
        eventId,
        type,
        chargeId,
        merchantRef,
        copy,
        body,
        status: "pending",
        attempts: [],
        nextAttemptAtMs: nowMs,
        createdAt: new Date(nowMs).toISOString(),
        ...(after ? { after } : {}),
      });
    }
    return eventId;
  }

  /** True while a delivery waits for the deliveries of the event it must follow (the reorder switch). */
  private held(delivery: DeliveryRecord): boolean {
    if (!delivery.after) return false;
    for (const d of this.state.pendingDeliveries) if (d.eventId === delivery.after) return true;
    return false;
  }

  private dispatch(delivery: DeliveryRecord): void {
    const cancel = new AttemptCancel();
    const done = this.attempt(delivery, cancel)
      .catch((error: unknown) => this.logger.error({ err: error, deliveryId: delivery.id }, "delivery attempt crashed"))
      .finally(() => {
        this.inFlight.delete(delivery.id);
        this.schedule();
      });
    this.inFlight.set(delivery.id, { cancel, done });
  }

  private async attempt(delivery: DeliveryRecord, cancel: AttemptCancel): Promise<void> {
    const startedMs = Date.now();
    const attemptNumber = delivery.attempts.length + 1;
    const record: AttemptRecord = {
      attempt: attemptNumber,
      startedAt: new Date(startedMs).toISOString(),
      durationMs: 0,
    };
    try {
      const answer = await this.poster.post(
        delivery.body,
        {
          "content-type": "application/json",
          [SIGNATURE_HEADER]: signWebhook(delivery.body, this.config.webhookSecrets, Math.floor(startedMs / 1000)),
          "user-agent": "wallet-sandbox-bank/1",
          "bank-delivery-attempt": String(attemptNumber),
        },
        { timeoutMs: this.config.attemptTimeoutMs, cancel, excerptChars: RESPONSE_EXCERPT_CHARS },
      );
      record.status = answer.status;
      record.responseBody = answer.body;
    } catch (error) {
      if (cancel.cancelled) return; // shutting down: not an attempt; the delivery stays pending
      const { code, message } = error as { code?: string; message?: string };
      record.error = error instanceof WebhookTimeoutError ? (message as string) : (code ?? message ?? String(error));
    }
    record.durationMs = Date.now() - startedMs;
    delivery.attempts.push(record);
    const ok = record.status !== undefined && record.status >= 200 && record.status < 300;
    const log = { deliveryId: delivery.id, eventId: delivery.eventId, type: delivery.type, attempt: attemptNumber };
    if (ok) {
      delivery.status = "delivered";
      delivery.finishedAt = new Date().toISOString();
      this.logger.info({ ...log, status: record.status }, "webhook delivered");
    } else if (delivery.attempts.length >= this.config.maxAttempts) {
      delivery.status = "failed";
      delivery.finishedAt = new Date().toISOString();
      this.logger.warn({ ...log, status: record.status, error: record.error }, "webhook given up");
    } else {
      const waitMs = retryDelayMs(
        delivery.attempts.length,
        this.config.retryBaseMs,
        this.config.retryMaxMs,
        this.random,
      );
      delivery.nextAttemptAtMs = Date.now() + waitMs;
      this.logger.info(
        { ...log, status: record.status, error: record.error, retryInMs: waitMs },
        "webhook will be retried",
      );
    }
    // After the status is set: the state keeps its set of pending deliveries from this report.
    this.state.deliveryChanged(delivery);
    this.state.pruneFinishedDeliveries(this.config.deliveryHistoryMax);
    this.saveInBackground();
  }
}
