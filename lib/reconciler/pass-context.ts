/**
 * What every job of one reconciler pass shares (lib/reconciler/reconcile-once.ts): the settings it runs with, and the
 * list of its outcomes, noted as they happen, from which the pass's result is derived once at the end
 * (./reconcile-result.ts `tallyPass`).
 */
import type { BankCallOptions } from "../bank/client";
import type { PassOutcome, ReconcileStep } from "./reconcile-result";

/** Where a pass writes what it does; pino's logger fits (the CLI passes one that writes to stderr). */
export interface ReconcileLogger {
  info(object: Record<string, unknown>, message: string): void;
  warn(object: Record<string, unknown>, message: string): void;
}

export interface ReconcileOptions {
  /** Bank base URL. Default env BANK_URL. */
  bankUrl?: string;
  /** Budget of one bank call, ms. Default env BANK_TIMEOUT_MS. */
  bankTimeoutMs?: number;
  /** Lease taken on a row (and the claim of a missing row), ms. Default env LEASE_MS. */
  leaseMs?: number;
  /** A row younger than this (seconds, by the database clock) that never reached the bank is re-driven. Default env REDRIVE_WINDOW_S. */
  redriveWindowS?: number;
  /** Currency a missing row may be claimed in. Default env WALLET_CURRENCY. */
  walletCurrency?: string;
  /** Lease owner written on taken-over and claimed rows. Default WORKER_ID (host:pid:random). */
  workerId?: string;
  /** Only these users' rows and charges (an admin reconciling one user; tests sharing a database). Default: everyone. */
  userIds?: readonly string[];
  /** Most rows one pass takes over. Default RECONCILE_ROWS_MAX_DEFAULT (./reconcile-once.ts). */
  rowsMax?: number;
  /** Most pages of the bank's charge list one pass reads. Default RECONCILE_CHARGE_PAGES_MAX_DEFAULT. */
  chargePagesMax?: number;
  /** How far back a fresh process reads the charge list, ms. Default CHARGE_LOOK_BACK_MS_DEFAULT (24 h). */
  lookBackMs?: number;
  /** Default: the app's logger (lib/log.ts). */
  logger?: ReconcileLogger;
}

/** One pass: its settings, resolved from {@link ReconcileOptions}, and what it has done so far. */
export interface PassContext {
  readonly bank: BankCallOptions;
  readonly leaseMs: number;
  readonly redriveWindowMs: number;
  readonly walletCurrency: string;
  readonly workerId: string;
  readonly userIds: readonly string[] | null;
  readonly rowsMax: number;
  readonly chargePagesMax: number;
  readonly lookBackMs: number;
  readonly logger: ReconcileLogger;
  /** Statement timeout of a row's transactions, ms (./row-guard.ts); null: the session's. */
  readonly rowStatementTimeoutMs: number | null;
  /** The step the pass is in (reported when the database becomes unreachable). */
  step: ReconcileStep;
  /** Rows (`userId/entryId`) whose work failed in this pass: not tried again before a later pass (counted once). */
  readonly erroredRows: Set<string>;
  /** What the pass did, in order ({@link note}). */
  readonly outcomes: PassOutcome[];
}

/**
 * Notes what the pass did. An outcome that names an anomaly is logged at once, so the log has every one (the result
 * lists the first hundred: ./reconcile-result.ts RECONCILE_ANOMALIES_MAX).
 */
export function note(pass: PassContext, outcome: PassOutcome): void {
  pass.outcomes.push(outcome);
  if ("anomaly" in outcome && outcome.anomaly) pass.logger.warn({ anomaly: outcome.anomaly }, "reconciler anomaly");
}
