/**
 * The sandbox bank's state: charges (one per merchant reference), cancelled keys, and webhook deliveries.
 * Held in memory (the bank is one process, so deciding "is there a charge for this key" is a synchronous map
 * lookup and insert with no interleaving) and persisted to one JSON file after every change, atomically:
 * write a temporary file, fsync, rename over the old one. A crash leaves either the old or the new file, never a
 * torn one. Writes are group-committed: every caller of {@link BankState.save} waits for a write whose snapshot
 * was taken after its change, and concurrent callers share one write.
 */
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { z } from "zod";

export type ChargeStatus = "pending" | "succeeded" | "declined";
export type EventType = "charge.succeeded" | "charge.failed";

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
  type: z.enum(["charge.succeeded", "charge.failed"]),
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
});

export class StateFileError extends Error {
  override name = "StateFileError";
}

/**
 * In-memory state plus its file. Collections are public for the engine and the server (same process, one
 * thread); every change must be followed by {@link save} before it is acknowledged to anyone outside.
 */
export class BankState {
  /** Charges in creation order (the `since` listing's order). */
  readonly charges: ChargeRecord[] = [];
  readonly chargesByRef = new Map<string, ChargeRecord>();
  readonly chargesById = new Map<string, ChargeRecord>();
  readonly cancelledKeys = new Set<string>();
  /** Deliveries in creation order. */
  deliveries: DeliveryRecord[] = [];

  private readonly path: string;
  private writing = false;
  private waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];

  private constructor(path: string) {
    this.path = resolve(path);
  }

  /**
   * Opens the state file at `path` (created on first save, with its folder).
   *
   * @returns the loaded state; an empty one when the file does not exist.
   * @throws {@link StateFileError} when the file exists but is not valid state (never silently discarded: it
   *   holds charges the app may depend on).
   */
  static async open(path: string): Promise<BankState> {
    const state = new BankState(path);
    let text: string;
    try {
      text = await readFile(state.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return state;
      throw error;
    }
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
    for (const charge of parsed.data.charges) state.addCharge(charge);
    for (const key of parsed.data.cancelledKeys) state.cancelledKeys.add(key);
    state.deliveries = parsed.data.deliveries;
    return state;
  }

  /** The file this state is saved to (absolute). */
  get filePath(): string {
    return this.path;
  }

  /** Adds a charge to every index. The caller has checked that its merchant reference is free. */
  addCharge(charge: ChargeRecord): void {
    this.charges.push(charge);
    this.chargesByRef.set(charge.merchantRef, charge);
    this.chargesById.set(charge.id, charge);
  }

  /**
   * Drops the oldest finished deliveries beyond `keep` (pending deliveries are never dropped: they are the
   * bank's promise of at-least-once delivery).
   */
  pruneFinishedDeliveries(keep: number): void {
    let finished = 0;
    for (const d of this.deliveries) if (d.status !== "pending") finished++;
    let excess = finished - keep;
    if (excess <= 0) return;
    this.deliveries = this.deliveries.filter((d) => {
      if (excess > 0 && d.status !== "pending") {
        excess--;
        return false;
      }
      return true;
    });
  }

  /**
   * Persists the current state. Resolves once a write that includes every change made before this call is
   * on disk (fsynced and renamed into place).
   *
   * @throws the file system's error when the write fails (the caller answers 500: the change is not durable).
   */
  save(): Promise<void> {
    return new Promise<void>((resolvePromise, reject) => {
      this.waiters.push({ resolve: resolvePromise, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.writing || this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    this.writing = true;
    // The snapshot is taken now, synchronously: it contains every change made before these waiters called save().
    const snapshot = this.serialize();
    this.writeAtomically(snapshot)
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
        this.kick();
      });
  }

  private serialize(): string {
    return JSON.stringify({
      version: 1,
      charges: this.charges,
      cancelledKeys: [...this.cancelledKeys],
      deliveries: this.deliveries,
    });
  }

  private async writeAtomically(text: string): Promise<void> {
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
  }
}
