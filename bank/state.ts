/**
 * The sandbox bank's state: charges (one per merchant reference), cancelled keys, and webhook deliveries.
 * Held in memory (the bank is one process, so deciding "is there a charge for this key" is a synchronous map
 * lookup and insert with no interleaving) and persisted as a snapshot plus an append-only journal:
 *
 * - `<file>.journal`: one JSON line per changed record (a charge, a delivery, a cancelled key, dropped delivery
 *   ids), each with a sequence number. A save appends the lines of the records changed since the last save and
 *   fsyncs the journal: its cost follows the change, not the size of the state.
 * - `<file>`: the whole state as one JSON document (version 1) with the last sequence number it includes. It is
 *   rewritten atomically (temporary file, fsync, rename) only when the journal has grown past the state's own size,
 *   and the journal is then emptied; lines a crash left behind that the snapshot already includes are skipped.
 *
 * A crash leaves every acknowledged change on disk: a save resolves only after its lines are fsynced. A line torn
 * by a crash in the middle of an append belonged to a save that never resolved; it is cut off when the state is
 * opened. Writes are group-committed: every caller of {@link BankState.save} waits for a write whose lines were
 * taken after its change, and concurrent callers share one write.
 *
 * Every change to a record must be reported ({@link BankState.addCharge}, {@link BankState.chargeChanged},
 * {@link BankState.addDelivery}, {@link BankState.deliveryChanged}, {@link BankState.cancelKey},
 * {@link BankState.pruneFinishedDeliveries}, {@link BankState.addRefund}, {@link BankState.refundChanged},
 * {@link BankState.addDispute}, {@link BankState.disputeChanged}, {@link BankState.addPayout},
 * {@link BankState.payoutChanged}) before
 * `save()`, or it is not persisted.
 */
import { ftruncateSync, writeSync } from "node:fs";
import { mkdir, open, readFile, rename, rm, type FileHandle } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { z } from "zod";
import { disputeSchema, type DisputeRecord } from "./disputes";
import { PAYOUT_EVENT_TYPES, payoutRecordSchema, type PayoutEventType, type PayoutRecord } from "./payouts";
import { REFUND_EVENT_TYPES, refundRecordSchema, type RefundEventType, type RefundRecord } from "./refunds";

export type ChargeStatus = "pending" | "succeeded" | "declined";
export type EventType =
  | "charge.succeeded"
  | "charge.failed"
  | "charge.disputed"
  | "charge.dispute_closed"
  | RefundEventType
  | PayoutEventType;

/** Which faults apply to a charge, decided once when it is created (by refId prefix or by global rate). */
export interface ChargeFaults {
  decline: boolean;
  slow: boolean;
  lost: boolean;
  dup: boolean;
  reorder: boolean;
  nohook: boolean;
}

export interface ChargeRecord {
  id: string;
  merchantRef: string;
  /** Minor units. */
  amount: number;
  currency: string;
  /** ISO-8601 UTC. */
  createdAt: string;
  status: ChargeStatus;
  /** The final status, decided at creation; `status` becomes this when the charge settles. */
  outcome: "succeeded" | "declined";
  faults: ChargeFaults;
  /** Epoch ms at which the charge settles and its webhook is queued. */
  settleAtMs: number;
  /** True once settled and its webhook events (if any) queued. */
  settled: boolean;
  /** True once the reorder switch's stale `charge.failed` has been queued (kept in the file for old states). */
  staleFailureQueued: boolean;
}

export interface AttemptRecord {
  /** 1-based. */
  attempt: number;
  startedAt: string;
  durationMs: number;
  /** HTTP status of the app's answer, absent when there was none (timeout, refused, reset). */
  status?: number;
  /** The app's answer, first 512 characters. */
  responseBody?: string;
  /** Why there was no answer. */
  error?: string;
}

export interface DeliveryRecord {
  id: string;
  eventId: string;
  type: EventType;
  chargeId: string;
  merchantRef: string;
  /** 1 normally; 1..3 for the duplicate switch (each copy is delivered and retried on its own). */
  copy: number;
  /** The exact body bytes (UTF-8) sent on every attempt, so every retry and copy is byte-identical. */
  body: string;
  /**
   * An event id whose deliveries must all have finished (delivered or given up) before this one is attempted: the
   * reorder switch holds the success back this way while the stale failure goes through (case C14).
   */
  after?: string;
  status: "pending" | "delivered" | "failed";
  attempts: AttemptRecord[];
  /** Epoch ms of the next attempt while pending. */
  nextAttemptAtMs: number;
  createdAt: string;
  finishedAt?: string;
}

const faultsSchema = z.object({
  decline: z.boolean(),
  slow: z.boolean(),
  lost: z.boolean(),
  dup: z.boolean(),
  reorder: z.boolean(),
  nohook: z.boolean(),
});
const chargeSchema = z.object({
  id: z.string(),
  merchantRef: z.string(),
  amount: z.number().int(),
  currency: z.string(),
  createdAt: z.string(),
  status: z.enum(["pending", "succeeded", "declined"]),
  outcome: z.enum(["succeeded", "declined"]),
  faults: faultsSchema,
  settleAtMs: z.number(),
  settled: z.boolean(),
  staleFailureQueued: z.boolean(),
});
const attemptSchema = z.object({
  attempt: z.number().int(),
  startedAt: z.string(),
  durationMs: z.number(),
  status: z.number().int().optional(),
  responseBody: z.string().optional(),
  error: z.string().optional(),
});
const deliverySchema = z.object({
  id: z.string(),
  eventId: z.string(),
  type: z.enum([
    "charge.succeeded",
    "charge.failed",
    "charge.disputed",
    "charge.dispute_closed",
    ...REFUND_EVENT_TYPES,
    ...PAYOUT_EVENT_TYPES,
  ]),
  chargeId: z.string(),
  merchantRef: z.string(),
  copy: z.number().int(),
  body: z.string(),
  after: z.string().optional(),
  status: z.enum(["pending", "delivered", "failed"]),
  attempts: z.array(attemptSchema),
  nextAttemptAtMs: z.number(),
  createdAt: z.string(),
  finishedAt: z.string().optional(),
});
/** Version 1 of the state file. A file of another version is refused rather than misread. */
const fileSchema = z.object({
  version: z.literal(1),
  charges: z.array(chargeSchema),
  cancelledKeys: z.array(z.string()),
  deliveries: z.array(deliverySchema),
  /** Disputes (bank/disputes.ts); absent in files written before disputes existed. */
  disputes: z.array(disputeSchema).optional(),
  /** The last journal line this snapshot includes (absent in files written before the journal: 0). */
  journalSeq: z.number().int().nonnegative().optional(),
  /** Refunds in creation order (absent in files written before refunds: none). */
  refunds: z.array(refundRecordSchema).optional(),
  /** Payouts in creation order (bank/payouts.ts; absent in files written before payouts: none). */
  payouts: z.array(payoutRecordSchema).optional(),
});
/** One journal line: a sequence number and exactly one changed record. */
const journalLineSchema = z.union([
  z.object({ s: z.number().int().positive(), c: chargeSchema }),
  z.object({ s: z.number().int().positive(), d: deliverySchema }),
  z.object({ s: z.number().int().positive(), k: z.string() }),
  z.object({ s: z.number().int().positive(), x: z.array(z.string()) }),
  z.object({ s: z.number().int().positive(), r: refundRecordSchema }),
  z.object({ s: z.number().int().positive(), p: disputeSchema }),
  z.object({ s: z.number().int().positive(), o: payoutRecordSchema }),
]);
type JournalLine = z.infer<typeof journalLineSchema>;

/**
 * Journal lines after which the snapshot is rewritten, at least: below this a rewrite would cost more than the
 * journal it replaces saves. Above it, the snapshot is rewritten once the journal holds more lines than the state
 * has records, so each rewrite is paid for by at least as many appended lines (constant cost per change).
 */
const COMPACT_AFTER_LINES_MIN = 10_000;

export class StateFileError extends Error {
  override name = "StateFileError";
}

/**
 * In-memory state plus its files. Collections are public for the engine and the server (same process, one
 * thread) to read; every change goes through the methods that record it, followed by {@link save} before it is
 * acknowledged to anyone outside.
 */
export class BankState {
  /** Charges in creation order (the `since` listing's order). */
  readonly charges: ChargeRecord[] = [];
  readonly chargesByRef = new Map<string, ChargeRecord>();
  readonly chargesById = new Map<string, ChargeRecord>();
  readonly cancelledKeys = new Set<string>();
  /** Deliveries in creation order. */
  deliveries: DeliveryRecord[] = [];
  /** Refunds in creation order (bank/refunds.ts), by key, by id and by charge. */
  readonly refunds: RefundRecord[] = [];
  readonly refundsByRef = new Map<string, RefundRecord>();
  readonly refundsById = new Map<string, RefundRecord>();
  readonly refundsByCharge = new Map<string, RefundRecord[]>();
  /** Disputes in opening order (bank/disputes.ts). */
  readonly disputes: DisputeRecord[] = [];
  readonly disputesById = new Map<string, DisputeRecord>();
  /** A charge's dispute: at most one per charge, as at card networks (bank/disputes.ts `DisputeDesk.open`). */
  readonly disputesByCharge = new Map<string, DisputeRecord>();
  /** Payouts in creation order (bank/payouts.ts), by key and by id. */
  readonly payouts: PayoutRecord[] = [];
  readonly payoutsByRef = new Map<string, PayoutRecord>();
  readonly payoutsById = new Map<string, PayoutRecord>();
  /**
   * The deliveries whose status is `pending`, in the order they were added: the engine's timer and dispatch walk
   * these, not the finished history. Kept by {@link addDelivery} and {@link deliveryChanged}.
   */
  readonly pendingDeliveries = new Set<DeliveryRecord>();

  private readonly path: string;
  private readonly journalPath: string;
  private journal: FileHandle | null = null;
  /** Sequence number of the last journal line written (or included in the snapshot). */
  private seq = 0;
  /** Journal lines written since the snapshot. */
  private journalLines = 0;
  /** The journal's size after its last complete append (where a failed append is cut back to). */
  private journalBytes = 0;
  private readonly changedCharges = new Set<ChargeRecord>();
  private readonly changedDeliveries = new Set<DeliveryRecord>();
  private readonly changedRefunds = new Set<RefundRecord>();
  private readonly changedDisputes = new Set<DisputeRecord>();
  private readonly changedPayouts = new Set<PayoutRecord>();
  /** The payout sequence's last number (bank/payouts.ts: the `since` listing's order). */
  private payoutSeq = 0;
  /** The dispute sequence's last number (bank/disputes.ts: the `since` listing's order). */
  private disputeSeq = 0;
  private newCancelledKeys: string[] = [];
  private droppedDeliveryIds: string[] = [];
  private writing = false;
  /** A {@link kick} is queued for the end of this event-loop turn. */
  private kickQueued = false;
  private waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];

  private constructor(path: string) {
    this.path = resolve(path);
    this.journalPath = `${this.path}.journal`;
  }

  /**
   * Opens the state at `path`: the snapshot file (if any) and then its journal `<path>.journal` (if any), both
   * created on first save, with their folder. A journal line torn by a crash mid-append is cut off unless
   * `repairTornTail` is false (a reader beside a live bank, whose append may be in progress).
   *
   * @returns the loaded state; an empty one when neither file exists.
   * @throws {@link StateFileError} when a file exists but is not valid state (never silently discarded: it holds
   *   charges the app may depend on).
   */
  static async open(path: string, options: { readonly repairTornTail?: boolean } = {}): Promise<BankState> {
    const state = new BankState(path);
    const text = await readIfExists(state.path);
    if (text !== null) {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (error) {
        throw new StateFileError(`${state.path} is not JSON: ${(error as Error).message}`);
      }
      const parsed = fileSchema.safeParse(json);
      if (!parsed.success) {
        throw new StateFileError(`${state.path} is not bank state (version 1): ${parsed.error.issues[0]?.message}`);
      }
      for (const charge of parsed.data.charges) state.indexCharge(charge);
      for (const key of parsed.data.cancelledKeys) state.cancelledKeys.add(key);
      state.deliveries = parsed.data.deliveries;
      for (const refund of parsed.data.refunds ?? []) state.indexRefund(refund);
      for (const dispute of parsed.data.disputes ?? []) state.indexDispute(dispute);
      for (const payout of parsed.data.payouts ?? []) state.indexPayout(payout);
      state.seq = parsed.data.journalSeq ?? 0;
      for (const d of state.deliveries) if (d.status === "pending") state.pendingDeliveries.add(d);
    }
    await state.replayJournal(options.repairTornTail ?? true);
    return state;
  }

  /** The snapshot file of this state (absolute); the journal is this path plus `.journal`. */
  get filePath(): string {
    return this.path;
  }

  /** Adds a new charge to every index and records it. The caller has checked that its merchant reference is free. */
  addCharge(charge: ChargeRecord): void {
    this.indexCharge(charge);
    this.changedCharges.add(charge);
  }

  /** Records that `charge` (already in the state) changed, so the next save writes it. */
  chargeChanged(charge: ChargeRecord): void {
    this.changedCharges.add(charge);
  }

  /** Adds a new refund to every index and records it. The caller has checked that its key is free. */
  addRefund(refund: RefundRecord): void {
    this.indexRefund(refund);
    this.changedRefunds.add(refund);
  }

  /** Records that `refund` (already in the state) changed, so the next save writes it. */
  refundChanged(refund: RefundRecord): void {
    this.changedRefunds.add(refund);
  }

  /** Appends a new delivery and records it. */
  addDelivery(delivery: DeliveryRecord): void {
    this.deliveries.push(delivery);
    if (delivery.status === "pending") this.pendingDeliveries.add(delivery);
    this.changedDeliveries.add(delivery);
  }

  /** Records that `delivery` (already in the state) changed, so the next save writes it. */
  deliveryChanged(delivery: DeliveryRecord): void {
    if (delivery.status !== "pending") this.pendingDeliveries.delete(delivery);
    this.changedDeliveries.add(delivery);
  }

  /** Adds a new dispute and records it. */
  addDispute(dispute: DisputeRecord): void {
    this.indexDispute(dispute);
    this.changedDisputes.add(dispute);
  }

  /** Records that `dispute` (already in the state) changed, so the next save writes it. */
  disputeChanged(dispute: DisputeRecord): void {
    this.changedDisputes.add(dispute);
  }

  /** The next number of the dispute sequence (every change of a dispute takes one). */
  nextDisputeSeq(): number {
    this.disputeSeq += 1;
    return this.disputeSeq;
  }

  /** The dispute sequence's last number taken (0 before any dispute). */
  lastDisputeSeq(): number {
    return this.disputeSeq;
  }

  /** Adds a new payout to every index and records it. The caller has checked that its key is free. */
  addPayout(payout: PayoutRecord): void {
    this.indexPayout(payout);
    this.changedPayouts.add(payout);
  }

  /** Records that `payout` (already in the state) changed, so the next save writes it. */
  payoutChanged(payout: PayoutRecord): void {
    this.changedPayouts.add(payout);
  }

  /** The next number of the payout sequence (every change of a payout takes one). */
  nextPayoutSeq(): number {
    this.payoutSeq += 1;
    return this.payoutSeq;
  }

  /** The payout sequence's last number taken (0 before any payout). */
  lastPayoutSeq(): number {
    return this.payoutSeq;
  }

  /** Marks `merchantRef` as cancelled for good and records it. */
  cancelKey(merchantRef: string): void {
    if (this.cancelledKeys.has(merchantRef)) return;
    this.cancelledKeys.add(merchantRef);
    this.newCancelledKeys.push(merchantRef);
  }

  /**
   * Drops the oldest finished deliveries beyond `keep` (pending deliveries are never dropped: they are the
   * bank's promise of at-least-once delivery), and records which.
   */
  pruneFinishedDeliveries(keep: number): void {
    let excess = this.deliveries.length - this.pendingDeliveries.size - keep;
    if (excess <= 0) return;
    // The oldest deliveries come first: walk from the front until `excess` finished ones are found (a walk as
    // long as the pending deliveries older than them, not the whole history), then cut that prefix in one splice.
    const keptPending: DeliveryRecord[] = [];
    let end = 0;
    while (excess > 0) {
      const d = this.deliveries[end++] as DeliveryRecord;
      if (d.status === "pending") keptPending.push(d);
      else {
        this.droppedDeliveryIds.push(d.id);
        excess--;
      }
    }
    this.deliveries.splice(0, end, ...keptPending);
  }

  /**
   * Persists every change recorded so far. Resolves once a write that includes every change recorded before this
   * call is on disk (fsynced).
   *
   * @throws the file system's error when the write fails (the caller answers 500: the change is not durable).
   */
  save(): Promise<void> {
    return new Promise<void>((resolvePromise, reject) => {
      this.waiters.push({ resolve: resolvePromise, reject });
      this.queueKick();
    });
  }

  /** Closes the journal file (after the last save). Safe to call twice. */
  async close(): Promise<void> {
    const journal = this.journal;
    this.journal = null;
    await journal?.close();
  }

  private indexCharge(charge: ChargeRecord): void {
    this.charges.push(charge);
    this.chargesByRef.set(charge.merchantRef, charge);
    this.chargesById.set(charge.id, charge);
  }

  private indexRefund(refund: RefundRecord): void {
    this.refunds.push(refund);
    this.refundsByRef.set(refund.merchantRef, refund);
    this.refundsById.set(refund.id, refund);
    const ofCharge = this.refundsByCharge.get(refund.chargeId);
    if (ofCharge) ofCharge.push(refund);
    else this.refundsByCharge.set(refund.chargeId, [refund]);
  }

  private indexDispute(dispute: DisputeRecord): void {
    const existing = this.disputesById.get(dispute.id);
    if (existing) Object.assign(existing, dispute);
    else {
      this.disputes.push(dispute);
      this.disputesById.set(dispute.id, dispute);
      this.disputesByCharge.set(dispute.chargeId, dispute);
    }
    this.disputeSeq = Math.max(this.disputeSeq, dispute.seq);
  }

  private indexPayout(payout: PayoutRecord): void {
    const existing = this.payoutsById.get(payout.id);
    if (existing) Object.assign(existing, payout);
    else {
      this.payouts.push(payout);
      this.payoutsById.set(payout.id, payout);
      this.payoutsByRef.set(payout.merchantRef, payout);
    }
    this.payoutSeq = Math.max(this.payoutSeq, payout.seq);
  }

  /**
   * Starts the next write at the end of this event-loop turn (setImmediate), so every save asked for in the same
   * turn (the requests and webhook answers read from one poll of the sockets) shares one write and one fdatasync.
   */
  private queueKick(): void {
    if (this.kickQueued) return;
    this.kickQueued = true;
    setImmediate(() => {
      this.kickQueued = false;
      this.kick();
    });
  }

  private kick(): void {
    if (this.writing || this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    this.writing = true;
    // The lines (or the snapshot) are serialised now, synchronously: they contain every change recorded before
    // these waiters called save().
    const lines = this.takeChangedLines();
    const records =
      this.charges.length +
      this.deliveries.length +
      this.cancelledKeys.size +
      this.refunds.length +
      this.disputes.length +
      this.payouts.length;
    const write =
      this.journalLines + lines.length > Math.max(COMPACT_AFTER_LINES_MIN, records)
        ? this.writeSnapshot(this.serialize())
        : this.appendJournal(lines);
    write
      .then(
        () => {
          for (const w of waiters) w.resolve();
        },
        (error: unknown) => {
          for (const w of waiters) w.reject(error);
        },
      )
      .finally(() => {
        this.writing = false;
        this.queueKick();
      });
  }

  /** The journal lines of every change recorded since the last call, numbered; clears the records. */
  private takeChangedLines(): string[] {
    const lines: string[] = [];
    const line = (record: Omit<JournalLine, "s">) => lines.push(`${JSON.stringify({ s: ++this.seq, ...record })}\n`);
    // Charges in the order they were first recorded: a new charge's first line comes in creation order.
    for (const charge of this.changedCharges) line({ c: charge });
    for (const delivery of this.changedDeliveries) line({ d: delivery });
    for (const key of this.newCancelledKeys) line({ k: key });
    for (const refund of this.changedRefunds) line({ r: refund });
    if (this.droppedDeliveryIds.length > 0) line({ x: this.droppedDeliveryIds });
    for (const dispute of this.changedDisputes) line({ p: dispute });
    for (const payout of this.changedPayouts) line({ o: payout });
    this.changedDisputes.clear();
    this.changedPayouts.clear();
    this.changedCharges.clear();
    this.changedDeliveries.clear();
    this.changedRefunds.clear();
    this.newCancelledKeys = [];
    this.droppedDeliveryIds = [];
    return lines;
  }

  private serialize(): string {
    return JSON.stringify({
      version: 1,
      charges: this.charges,
      cancelledKeys: [...this.cancelledKeys],
      deliveries: this.deliveries,
      disputes: this.disputes,
      journalSeq: this.seq,
      refunds: this.refunds,
      payouts: this.payouts,
    });
  }

  private async appendJournal(lines: readonly string[]): Promise<void> {
    if (lines.length === 0) return;
    if (!this.journal) {
      await mkdir(dirname(this.journalPath), { recursive: true });
      this.journal = await open(this.journalPath, "a", 0o600);
      this.journalBytes = (await this.journal.stat()).size;
    }
    // One synchronous write into the page cache (microseconds for a group's few KB), then one fdatasync off the
    // event loop: the promise API's write loop cost more CPU than the write itself.
    const bytes = Buffer.from(lines.join(""), "utf8");
    const fd = this.journal.fd;
    try {
      for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written);
    } catch (error) {
      // A part of the lines may be in the file (a full disk): cut it off, so the next append starts on a line of
      // its own and the journal never holds a torn line before a complete one.
      try {
        ftruncateSync(fd, this.journalBytes);
      } catch {
        // The write's error is the one to report; a torn line left here stops the next start (never skipped).
      }
      throw error;
    }
    this.journalBytes += bytes.length;
    await this.journal.datasync();
    this.journalLines += lines.length;
  }

  /**
   * Rewrites the snapshot (which includes every journal line so far) and then empties the journal. A crash in
   * between leaves journal lines the snapshot already has; their sequence numbers make {@link open} skip them.
   */
  private async writeSnapshot(text: string): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    const temporary = `${this.path}.${process.pid}.tmp`;
    const handle = await open(temporary, "w", 0o600);
    try {
      await handle.writeFile(text, "utf8");
      // fsync before rename: otherwise a power loss can leave the renamed file empty.
      await handle.sync();
    } catch (error) {
      await handle.close();
      await rm(temporary, { force: true });
      throw error;
    }
    await handle.close();
    await rename(temporary, this.path);
    await this.close();
    const emptied = await open(this.journalPath, "w", 0o600);
    await emptied.sync();
    await emptied.close();
    this.journalLines = 0;
  }

  /** Applies the journal's lines newer than the snapshot; cuts off a torn last line. */
  private async replayJournal(repairTornTail: boolean): Promise<void> {
    const text = await readIfExists(this.journalPath);
    if (!text) return;
    const end = text.lastIndexOf("\n") + 1;
    if (end < text.length && repairTornTail) {
      // The last append did not finish (a crash mid-write): its save never resolved, so nothing acknowledged
      // depends on it. Cut it off so the next append starts on a line of its own.
      const handle = await open(this.journalPath, "r+");
      await handle.truncate(end);
      await handle.sync();
      await handle.close();
    }
    const deliveriesById = new Map(this.deliveries.map((d) => [d.id, d]));
    const lines = text.slice(0, end).split("\n");
    lines.pop();
    lines.forEach((raw, index) => {
      let parsed: ReturnType<typeof journalLineSchema.safeParse>;
      try {
        parsed = journalLineSchema.safeParse(JSON.parse(raw));
      } catch (error) {
        throw new StateFileError(`${this.journalPath} line ${index + 1} is not JSON: ${(error as Error).message}`);
      }
      if (!parsed.success) {
        throw new StateFileError(
          `${this.journalPath} line ${index + 1} is not a journal line: ${parsed.error.issues[0]?.message}`,
        );
      }
      const line = parsed.data;
      this.journalLines++;
      if (line.s <= this.seq) return; // already in the snapshot
      this.seq = line.s;
      if ("c" in line) {
        const existing = this.chargesById.get(line.c.id);
        if (existing) Object.assign(existing, line.c);
        else this.indexCharge(line.c);
      } else if ("d" in line) {
        const existing = deliveriesById.get(line.d.id);
        if (existing) {
          Object.assign(existing, line.d);
          if (existing.status !== "pending") this.pendingDeliveries.delete(existing);
        } else {
          this.deliveries.push(line.d);
          if (line.d.status === "pending") this.pendingDeliveries.add(line.d);
          deliveriesById.set(line.d.id, line.d);
        }
      } else if ("r" in line) {
        const existing = this.refundsById.get(line.r.id);
        if (existing) Object.assign(existing, line.r);
        else this.indexRefund(line.r);
      } else if ("k" in line) {
        this.cancelledKeys.add(line.k);
      } else if ("p" in line) {
        this.indexDispute(line.p);
      } else if ("o" in line) {
        this.indexPayout(line.o);
      } else {
        const dropped = new Set(line.x);
        this.deliveries = this.deliveries.filter((d) => !dropped.has(d.id));
        for (const id of line.x) {
          const d = deliveriesById.get(id);
          if (d) this.pendingDeliveries.delete(d);
          deliveriesById.delete(id);
        }
      }
    });
  }
}

async function readIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

/**
 * The durable state at `path` as it would be loaded now (snapshot plus journal), as plain data: for tests and
 * tools that check what the bank has persisted. Read-only: an unfinished last journal line (an append in
 * progress, or torn by a crash) is ignored, not cut off. Throws {@link StateFileError} as `open` does.
 */
export async function readPersistedState(path: string): Promise<{
  charges: ChargeRecord[];
  cancelledKeys: string[];
  deliveries: DeliveryRecord[];
  refunds: RefundRecord[];
  disputes: DisputeRecord[];
  payouts: PayoutRecord[];
}> {
  const state = await BankState.open(path, { repairTornTail: false });
  return {
    charges: state.charges,
    cancelledKeys: [...state.cancelledKeys],
    deliveries: state.deliveries,
    refunds: state.refunds,
    disputes: state.disputes,
    payouts: state.payouts,
  };
}
