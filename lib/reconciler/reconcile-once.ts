/**
 * One reconciler pass (contract sections 2, 5 and 7): brings the ledger and the bank back into agreement
 * in both directions, through the same lib/ledger functions as live traffic (claim, guarded transitions,
 * first-writer-wins responses), so the reconciler can collide with a request, a webhook or another reconciler but
 * never race them.
 *
 * Policy (re-drive window, cancel-then-fail-as-expired, cursor look-back):
 * docs/decisions/003-failure-and-recovery-policy.md.
 */
import { reconcileDisputes } from "../chargebacks/reconcile-disputes";
import { repairRewardCounters } from "../rewards/repair-reward-counters";
import { env } from "../env";
import { countReconcilePass } from "../metrics/registry";
import { log } from "../log";
import { pool } from "../db";
import {
  cancelCharge,
  createCharge,
  getCharge,
  listChargesSince,
  type BankCallOptions,
  type BankCharge,
  type UnknownOutcome,
} from "../bank/client";
import { merchantRefFor, parseMerchantRef } from "../bank/merchant-ref";
import {
  countExpiredUnfinishedEntries,
  findEntryByKey,
  insertClaimOrLose,
  isTerminal,
  operationKey,
  recordSettleFailure,
  runClaimedOperation,
  takeOverExpiredEntry,
  WORKER_ID,
  type LedgerEntry,
  type TakenOverEntry,
  classifyDbError,
} from "../ledger";
import { CHARGE_LOOK_BACK_MS_DEFAULT, readChargeCursorMs, writeChargeCursorMs } from "./charge-cursor";
import { ReconcileTally, type ReconcileAnomaly, type ReconcileResult, type ReconcileStep } from "./reconcile-result";
import { inRowTransaction, judgeRowError, rowStatementTimeoutMs } from "./row-guard";
import { describeSettleError, settleTopup, type ChargeEvidence, type SettlementOutcome } from "../topups/settle-topup";
import { reconcileRefundEntry } from "../refunds/reconcile-refund";
import { refundMerchantRefFor } from "../refunds/refund-ref";
import { storeFinishedTopupResponse } from "../topups/topup-response";
import { admitTopup } from "../topups/admit-topup";

export type { ReconcileResult, ReconcileAnomaly } from "./reconcile-result";

/**
 * Most rows one pass takes over. 200: a row costs one or two local bank calls and two short statements (a few
 * milliseconds), so a full batch finishes in about a second, well inside RECONCILE_INTERVAL_MS (10 s) and
 * LEASE_MS (30 s, after which a row taken over early in the pass could be taken over again by another
 * reconciler). A larger backlog drains over the following passes.
 */
export const RECONCILE_ROWS_MAX_DEFAULT = 200;

/**
 * Most pages of the bank's charge list read in one pass. 10 pages of 1000 (the bank's page maximum) = 10,000
 * charges: a day of the demo's traffic many times over; what is left is read by the next pass from the cursor.
 */
export const RECONCILE_CHARGE_PAGES_MAX_DEFAULT = 10;

/** The bank's largest page (docs/bank-sandbox.md): fewest round trips per pass. */
const CHARGE_PAGE_LIMIT = 1000;

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
  /** Default {@link RECONCILE_ROWS_MAX_DEFAULT}. */
  rowsMax?: number;
  /** Default {@link RECONCILE_CHARGE_PAGES_MAX_DEFAULT}. */
  chargePagesMax?: number;
  /** How far back a fresh process reads the charge list, ms. Default {@link CHARGE_LOOK_BACK_MS_DEFAULT} (24 h). */
  lookBackMs?: number;
  /** Default: the app's logger (lib/log.ts). */
  logger?: ReconcileLogger;
}

interface PassContext {
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
  readonly tally: ReconcileTally;
  /** The first unknown bank outcome of the pass (its reason is reported), and how many rows it left. */
  unknown: { outcome: UnknownOutcome; rowsLeft: number } | null;
  /** Statement timeout of a row's transactions, ms (./row-guard.ts); null: the session's. */
  readonly rowStatementTimeoutMs: number | null;
  /** The step the pass is in (reported when the database becomes unreachable). */
  step: ReconcileStep;
  /** Rows (`userId/entryId`) whose work failed in this pass: not tried again before a later pass (counted once). */
  readonly erroredRows: Set<string>;
}

/**
 * Thrown inside a pass, and caught by {@link reconcileOnce} only, when the database cannot be reached at all: the
 * pass stops and reports what it did (case C29). Never escapes the pass.
 */
class DatabaseUnreachableError extends Error {
  constructor(readonly error: unknown) {
    super("the database cannot be reached", { cause: error });
  }
}

/**
 * Runs one pass, ledger → bank then bank → ledger.
 *
 * Ledger → bank: takes over, one at a time, unfinished top-ups whose lease expired (at most `rowsMax`), asks the
 * bank for the charge of each one's merchant reference, and:
 *  - `succeeded` → completes it with a credit; `declined` → fails it; `pending` → leaves it (charge id attached);
 *  - no charge, row younger than the re-drive window → sends the charge again with the same Idempotency-Key;
 *  - no charge, older → cancels the key at the bank, and fails the row as `expired` only when the bank confirms
 *    no charge exists (when the cancel reports a charge, the row is settled from that charge);
 *  - bank unreachable → leaves the row and reports it (contract 7.5). A failed read stops the direction (the
 *    bank is down); a failed write (re-drive, cancel) leaves that row only.
 * Bank → ledger: reads the charges created since this process's cursor (24 h back at first); a succeeded
 * charge whose row is missing is claimed under the same key (so it collides with a live request instead of
 * racing it), completed and given its stored response; an unfinished row is settled; a failed row with a
 * succeeded charge, or any amount/currency mismatch, is an anomaly and credits nothing.
 * Whenever the reconciler finishes a row whose request is gone, it stores the 201 `{ topup: T }` response first-
 * writer-wins, so a retry of the original request replays (case C12).
 *
 * Then the disputes changed at the bank since this process's dispute cursor (lib/chargebacks/reconcile-disputes.ts).
 *
 * Rewards and payments are single-transaction and never unfinished; one found unfinished is reported as an
 * anomaly and left alone. Refund rows left in flight are finished through lib/refunds/reconcile-refund.ts.
 *
 * One row cannot stop the pass (case C29). A row's settlement runs in a transaction whose statements are bounded by
 * {@link rowStatementTimeoutMs} (2 s: a wallet locked for minutes costs that row one bounded wait, not the pass);
 * whatever the row's work throws (a constraint, a timeout, an unexpected SQLSTATE, a bug) is logged naming its
 * merchant reference and charge id (contract section 5), counted on the row (`settle_failures`, flagged after
 * SETTLE_ATTEMPTS_MAX: lib/ledger `recordSettleFailure`), reported as a `row_error` anomaly and in `errored`, and
 * the pass goes on with the next row, the charges, the disputes and the reward counters; the row is tried again by
 * a later pass once its lease expires. A step that fails outside any row (e.g. the take-over itself) is reported the
 * same way and the pass goes on with the next step. Only a database that cannot be reached at all stops the pass,
 * reported as `databaseUnreachable` beside what the pass did until then.
 *
 * Returns the counts (see {@link ReconcileResult}): partial results when something failed, never an exception for
 * a row's, a step's or the database's failure. Rows already handled stay handled; rows taken over and not finished
 * are retried after their lease.
 */
export async function reconcileOnce(options: ReconcileOptions = {}): Promise<ReconcileResult> {
  const settings = env();
  const ctx: PassContext = {
    bank: {
      bankUrl: options.bankUrl ?? settings.BANK_URL,
      timeoutMs: options.bankTimeoutMs ?? settings.BANK_TIMEOUT_MS,
    },
    leaseMs: options.leaseMs ?? settings.LEASE_MS,
    redriveWindowMs: (options.redriveWindowS ?? settings.REDRIVE_WINDOW_S) * 1000,
    walletCurrency: options.walletCurrency ?? settings.WALLET_CURRENCY,
    workerId: options.workerId ?? WORKER_ID,
    userIds: options.userIds ? [...options.userIds] : null,
    rowsMax: options.rowsMax ?? RECONCILE_ROWS_MAX_DEFAULT,
    chargePagesMax: options.chargePagesMax ?? RECONCILE_CHARGE_PAGES_MAX_DEFAULT,
    lookBackMs: options.lookBackMs ?? CHARGE_LOOK_BACK_MS_DEFAULT,
    logger: options.logger ?? log(),
    tally: new ReconcileTally(),
    unknown: null,
    rowStatementTimeoutMs: rowStatementTimeoutMs(),
    step: "ledger_to_bank",
    erroredRows: new Set(),
  };

  let chargesUnlisted = false;
  let rowsLeftUncounted = 0;
  try {
    const unfinished = await guardStep(ctx, "ledger_to_bank", () => reconcileUnfinishedEntries(ctx));
    const bankDown = unfinished.ok && unfinished.value;
    if (bankDown) chargesUnlisted = true;
    else {
      const charges = await guardStep(ctx, "bank_to_ledger", () => reconcileBankCharges(ctx));
      // A step that failed inside the app is reported on its own; only a bank that could not be read is "unlisted".
      chargesUnlisted = charges.ok && !charges.value;
    }
    // Disputes the webhooks missed (contract section 12): lost ones debit once, reversed ones credit back once.
    if (!chargesUnlisted) await guardStep(ctx, "disputes", () => reconcileDisputesOfPass(ctx));
    if (bankDown) {
      const remaining = await guardStep(ctx, "ledger_to_bank", () => countExpiredUnfinishedEntries(ctx.userIds));
      if (remaining.ok) rowsLeftUncounted = remaining.value;
    }
    // Reward counters a Redis failover left below the ledger are raised back (docs/decisions/016).
    await guardStep(ctx, "reward_counters", () => repairRewardCounters({ userIds: ctx.userIds }));
  } catch (error) {
    if (!(error instanceof DatabaseUnreachableError)) throw error;
    ctx.tally.databaseUnreachable = { step: ctx.step, reason: describeSettleError(error.error) };
    // The pass stopped: an operator must look (the next pass starts over; nothing it left is lost).
    log().error(
      { err: error.error, step: ctx.step, reconcile: ctx.tally.toResult() },
      "reconciler pass stopped: the database cannot be reached",
    );
  }

  if (ctx.unknown || chargesUnlisted) {
    ctx.tally.bankUnreachable = {
      reason: ctx.unknown ? describeUnknown(ctx.unknown.outcome) : "charge list unreadable",
      rowsLeft: (ctx.unknown?.rowsLeft ?? 0) + rowsLeftUncounted,
      chargesUnlisted,
    };
  }
  const result = ctx.tally.toResult();
  countReconcilePass(result);
  // A quiet pass (the demo runs one every 10 s) is not logged; one that did or found something is.
  if (result.examined > 0 || result.anomalies || result.bankUnreachable)
    ctx.logger.info({ reconcile: result }, "reconciler pass finished");
  return result;
}

function describeUnknown(outcome: UnknownOutcome): string {
  return outcome.detail ? `${outcome.reason}: ${outcome.detail}` : outcome.reason;
}

function noteUnknown(ctx: PassContext, outcome: UnknownOutcome, rowsLeft: number): void {
  if (ctx.unknown) ctx.unknown.rowsLeft += rowsLeft;
  else ctx.unknown = { outcome, rowsLeft };
}

function recordAnomaly(ctx: PassContext, anomaly: ReconcileAnomaly): void {
  ctx.tally.addAnomaly(anomaly);
  ctx.logger.warn({ anomaly }, "reconciler anomaly");
}

/**
 * Runs one step of the pass. An error outside any row's guard (the take-over statement, a listing, a bug) is
 * reported as a `row_error` anomaly without a merchant reference and counted in `errored`, and the pass goes on
 * with the next step: `{ ok: false }`. Throws {@link DatabaseUnreachableError} when the database cannot be reached.
 */
async function guardStep<T>(
  ctx: PassContext,
  step: ReconcileStep,
  work: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false }> {
  ctx.step = step;
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    if (error instanceof DatabaseUnreachableError) throw error;
    if ((await judgeRowError(error)) === "database_unreachable") throw new DatabaseUnreachableError(error);
    ctx.tally.errored += 1;
    ctx.logger.warn({ err: error, step }, "reconciler: a step failed; the pass goes on with the next one");
    recordAnomaly(ctx, {
      kind: "row_error",
      merchantRef: null,
      chargeId: null,
      detail: `the ${step.replaceAll("_", " ")} step failed outside any row: ${describeSettleError(error)}`,
    });
    return { ok: false };
  }
}

/**
 * The dispute step (lib/chargebacks/reconcile-disputes.ts): each dispute whose entries the database refused or
 * failed is reported as a `row_error` naming its charge's merchant reference and charge id, and counted in `errored`.
 */
async function reconcileDisputesOfPass(ctx: PassContext): Promise<void> {
  const disputes = await reconcileDisputes(ctx);
  for (const failure of disputes.errors) {
    ctx.tally.errored += 1;
    recordAnomaly(ctx, {
      kind: "row_error",
      merchantRef: failure.merchantRef,
      chargeId: failure.chargeId,
      detail: `dispute ${failure.disputeId}: ${failure.detail}`,
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Ledger → bank
// ---------------------------------------------------------------------------------------------------------------

/** Returns true when the bank could not be read and the direction stopped early. */
async function reconcileUnfinishedEntries(ctx: PassContext): Promise<boolean> {
  for (let taken = 0; taken < ctx.rowsMax; taken++) {
    const row = await takeOverExpiredEntry({ workerId: ctx.workerId, leaseMs: ctx.leaseMs, userIds: ctx.userIds });
    if (!row) return false;
    ctx.tally.examined += 1;
    const subject = subjectOf(row.entry);
    // A row whose work fails is counted and left; the loop goes on with the next row (case C29).
    const verdict = await guardRow(ctx, subject, () => reconcileTakenOverEntry(ctx, row, subject));
    if (verdict === "bank_down") return true;
  }
  return false;
}

/** What became of one row: done with for this pass (settled or left), the bank down, or its work failed (counted). */
type RowVerdict = "done" | "bank_down" | "errored";

/** What a row's work is about: named by every anomaly and error it reports (contract section 5, case C19). */
interface Subject {
  merchantRef: string | null;
  /** Filled in as soon as the charge is known (the bank's answer), so an error after it names the charge. */
  chargeId: string | null;
  /** The ledger row, once known: a failure of the work is counted on it. */
  entry: LedgerEntry | null;
}

function subjectOf(entry: LedgerEntry): Subject {
  return { merchantRef: merchantRefOfEntry(entry), chargeId: entry.bankChargeId, entry };
}

/**
 * The key the row is known by at the bank: `topup:<userId>:<refId>` for a top-up (contract section 5),
 * `refund:<userId>:<refundId>` for a refund (contract section 11, lib/refunds/refund-ref.ts); null for the types that
 * never reach the bank, and for a key that cannot be written as one.
 */
function merchantRefOfEntry(entry: LedgerEntry): string | null {
  if (entry.type === "topup") return safeMerchantRef(entry);
  if (entry.type !== "refund") return null;
  try {
    return refundMerchantRefFor(entry.userId, entry.refId);
  } catch {
    return null;
  }
}

const rowKey = (entry: LedgerEntry): string => `${entry.userId}/${entry.id}`;

/**
 * Runs the work on one row (or one bank charge). Whatever it throws stays with that row (case C29): a constraint
 * violation (a bug on that row, e.g. two rows claiming one bank charge), a statement that timed out behind a lock
 * (./row-guard.ts), an unexpected SQLSTATE, a bug. The error is logged and reported as a `row_error` anomaly naming
 * `subject`'s merchant reference and charge id as they are when it happened (contract section 5), counted on the
 * row, and the row is left for a later pass: returns "errored", and the pass goes on. Throws
 * {@link DatabaseUnreachableError} only when the database cannot be reached at all.
 */
async function guardRow(ctx: PassContext, subject: Subject, work: () => Promise<RowVerdict>): Promise<RowVerdict> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DatabaseUnreachableError) throw error;
    if ((await judgeRowError(error)) === "database_unreachable") throw new DatabaseUnreachableError(error);
    const verdict = classifyDbError(error);
    ctx.logger.warn(
      { err: error, verdict, merchantRef: subject.merchantRef, chargeId: subject.chargeId },
      "reconciler: a row's work failed; left for a later pass",
    );
    ctx.tally.skipped += 1;
    ctx.tally.errored += 1;
    const counted = subject.entry ? await countRowFailure(subject.entry, subject, error) : "";
    const sqlstate = sqlstateOf(error);
    const what =
      verdict.kind === "unknown" || verdict.kind === "retryable" || verdict.kind === "connection_lost"
        ? `the row's work failed (${sqlstate ? `SQLSTATE ${sqlstate}: ` : ""}${describeSettleError(error)})`
        : `the database refused a transition (${verdict.kind}${"constraint" in verdict && verdict.constraint ? ` on ${verdict.constraint}` : ""})`;
    recordAnomaly(ctx, {
      kind: "row_error",
      merchantRef: subject.merchantRef,
      chargeId: subject.chargeId,
      detail: `${what}${counted}`,
    });
    if (subject.entry) ctx.erroredRows.add(rowKey(subject.entry));
    return "errored";
  }
}

/**
 * The SQLSTATE an error carries (a pg `DatabaseError`'s `code`, or one a few `cause`s down), for the admin's reading
 * only: the decisions are lib/ledger `classifyDbError`'s. Null when there is none.
 */
function sqlstateOf(error: unknown): string | null {
  let current: unknown = error;
  // 4 levels: a pg error under our own wrappers sits at most 3 deep (lib/ledger/db-errors.ts, case C01).
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/**
 * Counts one failed attempt on `entry`, whatever its type (contract section 5: a settlement that keeps failing is
 * flagged after SETTLE_ATTEMPTS_MAX attempts, with its last error; lib/ledger `recordSettleFailure`). Logged naming
 * `subject`'s merchant reference and charge id; at error level once flagged. Returns the words the anomaly adds
 * ("; failure 2 of 5 on this row"), or "" when nothing could be recorded. Never throws: a failure to record is
 * logged, and the row's own error stands.
 */
async function countRowFailure(entry: LedgerEntry, subject: Subject, error: unknown): Promise<string> {
  const noun = entry.type === "topup" ? "top-up" : entry.type;
  const attemptsMax = env().SETTLE_ATTEMPTS_MAX;
  try {
    const noted = await recordSettleFailure(
      { userId: entry.userId, entryId: entry.id },
      describeSettleError(error),
      attemptsMax,
    );
    if (!noted) return "";
    const fields = {
      err: error,
      merchantRef: subject.merchantRef,
      chargeId: subject.chargeId,
      failures: noted.failures,
    };
    // The same words as lib/topups/settle-topup.ts `noteSettleFailure`, for every type the reconciler settles.
    if (noted.flaggedAt) log().error(fields, `${noun} settlement keeps failing: flagged for attention`);
    else log().warn(fields, `${noun} settlement failed`);
    return `; failure ${noted.failures} of ${attemptsMax} on this row${noted.flaggedAt ? ", flagged for attention" : ""}`;
  } catch (recordError) {
    log().error(
      { err: recordError, cause: error, merchantRef: subject.merchantRef, chargeId: subject.chargeId },
      "settlement failure not recorded",
    );
    return "";
  }
}

function safeMerchantRef(entry: LedgerEntry): string | null {
  try {
    return merchantRefFor(entry.userId, entry.refId);
  } catch {
    return null;
  }
}

async function reconcileTakenOverEntry(ctx: PassContext, row: TakenOverEntry, subject: Subject): Promise<RowVerdict> {
  const { entry } = row;
  if (entry.type === "refund") return await reconcileRefundRow(ctx, entry);
  if (entry.type !== "topup") {
    ctx.tally.skipped += 1;
    recordAnomaly(ctx, {
      kind: "unfinished_non_topup",
      merchantRef: null,
      chargeId: null,
      detail: `${entry.type} ${entry.refId} of user ${entry.userId} is ${entry.status}; rewards and payments finish in one transaction`,
    });
    return "done";
  }
  const merchantRef = safeMerchantRef(entry);
  if (merchantRef === null) {
    ctx.tally.skipped += 1;
    recordAnomaly(ctx, {
      kind: "invalid_merchant_ref",
      merchantRef: null,
      chargeId: null,
      detail: `top-up ${entry.refId} of user ${entry.userId} has no valid merchant reference`,
    });
    return "done";
  }

  const looked = await getCharge(merchantRef, ctx.bank);
  switch (looked.kind) {
    case "found":
      subject.chargeId = looked.charge.id;
      await applySettle(
        ctx,
        await settleAsReconciler(
          ctx,
          entry,
          { source: "bank", charge: looked.charge },
          "reconciler: from the bank's charge after the lease expired",
        ),
        {
          storeResponse: true,
          pendingCounts: "skipped",
        },
      );
      return "done";
    case "not_found":
      // The bank has no charge for this key: the request never reached it (or its call is lost for good).
      if (row.ageMs < ctx.redriveWindowMs) return await redrive(ctx, entry, merchantRef);
      return await cancelThenExpire(ctx, entry, merchantRef);
    case "unknown":
      // A read failed: the bank is down or unreadable. Leave this row (and the rest) for a later pass.
      ctx.tally.skipped += 1;
      noteUnknown(ctx, looked, 1);
      return "bank_down";
    case "rejected":
      ctx.tally.skipped += 1;
      recordAnomaly(ctx, {
        kind: "bank_refused",
        merchantRef,
        chargeId: null,
        detail: `GET /charges answered ${looked.status} ${looked.code}`,
      });
      return "done";
  }
}

/** A refund row left in flight (contract section 11): asked again at the bank by lib/refunds/reconcile-refund.ts. */
async function reconcileRefundRow(ctx: PassContext, entry: LedgerEntry): Promise<RowVerdict> {
  // Its key at the bank is the refund's own (`refund:<userId>:<refundId>`), never a top-up's.
  const merchantRef = merchantRefOfEntry(entry);
  const outcome = await reconcileRefundEntry(entry, ctx.bank);
  switch (outcome.kind) {
    case "completed":
      ctx.tally.completed += 1;
      return "done";
    case "failed":
      ctx.tally.failed += 1;
      return "done";
    case "bank_down":
      ctx.tally.skipped += 1;
      noteUnknown(ctx, { kind: "unknown", reason: "network", detail: outcome.reason }, 1);
      return "bank_down";
    case "anomaly":
      ctx.tally.skipped += 1;
      recordAnomaly(ctx, {
        kind: "bank_refused",
        merchantRef,
        chargeId: entry.bankChargeId,
        detail: outcome.detail,
      });
      return "done";
    default:
      ctx.tally.skipped += 1;
      return "done";
  }
}

/**
 * Sends the charge again with the same Idempotency-Key: the bank makes at most one charge per key. A row that never
 * got past `initiated` passes the same headroom gate as a live request first (contract section 5, case C15).
 */
async function redrive(ctx: PassContext, entry: LedgerEntry, merchantRef: string): Promise<RowVerdict> {
  if (entry.status === "initiated") {
    // Records that the bank may be called from here on, or fails the row with its stored 422 when there is no room.
    const admission = await inRowTransaction(ctx.rowStatementTimeoutMs, (db) =>
      admitTopup(entry, entry.attempt, "reconciler", db),
    );
    if (admission.kind === "no_room") {
      ctx.tally.failed += 1;
      return "done";
    }
    if (admission.kind === "fenced") {
      ctx.tally.skipped += 1;
      return "done";
    }
  }
  const created = await createCharge(
    { merchantRef, amountMinor: entry.amountMinor, currency: entry.currency },
    ctx.bank,
  );
  switch (created.kind) {
    case "charge":
      ctx.tally.redriven += 1;
      await applySettle(
        ctx,
        await settleAsReconciler(
          ctx,
          entry,
          { source: "bank", charge: created.charge },
          "reconciler: re-driven to the bank",
        ),
        {
          storeResponse: true,
          pendingCounts: "nothing",
        },
      );
      return "done";
    case "rejected":
      if (created.status === 409 && created.code === "idempotency_key_cancelled") {
        // An earlier pass cancelled the key and stopped before failing the row: no charge exists or ever will.
        await applySettle(
          ctx,
          await settleAsReconciler(
            ctx,
            entry,
            { source: "key_cancelled" },
            "reconciler: the key was already cancelled at the bank",
          ),
          { storeResponse: true, pendingCounts: "skipped" },
        );
        return "done";
      }
      ctx.tally.skipped += 1;
      recordAnomaly(ctx, {
        kind: "bank_refused",
        merchantRef,
        chargeId: null,
        detail: `re-drive answered ${created.status} ${created.code}`,
      });
      return "done";
    case "unknown":
      // The charge may or may not exist now; the row stays as it is and the next pass asks the bank again.
      ctx.tally.skipped += 1;
      noteUnknown(ctx, created, 1);
      return "done";
  }
}

/**
 * Past the re-drive window: make the key unusable at the bank first, and fail the row only when the bank
 * confirms that no charge exists. A charge that appears in between (a request stuck in the network) is found by
 * the cancel itself, and the row is settled from it instead.
 */
async function cancelThenExpire(ctx: PassContext, entry: LedgerEntry, merchantRef: string): Promise<RowVerdict> {
  const cancelled = await cancelCharge(merchantRef, ctx.bank);
  switch (cancelled.kind) {
    case "cancelled":
      await applySettle(
        ctx,
        await settleAsReconciler(
          ctx,
          entry,
          { source: "key_cancelled" },
          "reconciler: never reached the bank; key cancelled there after the re-drive window",
        ),
        {
          storeResponse: true,
          pendingCounts: "skipped",
        },
      );
      return "done";
    case "charge_exists":
      await applySettle(
        ctx,
        await settleAsReconciler(
          ctx,
          entry,
          { source: "bank", charge: cancelled.charge },
          "reconciler: charge found while cancelling",
        ),
        {
          storeResponse: true,
          pendingCounts: "skipped",
        },
      );
      return "done";
    case "unknown":
      ctx.tally.skipped += 1;
      noteUnknown(ctx, cancelled, 1);
      return "done";
    case "rejected":
      ctx.tally.skipped += 1;
      recordAnomaly(ctx, {
        kind: "bank_refused",
        merchantRef,
        chargeId: null,
        detail: `cancel answered ${cancelled.status} ${cancelled.code}`,
      });
      return "done";
  }
}

/**
 * Settles a row from the bank's word as the reconciler: status-only guard, the bank is the source of truth. Runs in
 * the row's own transaction, whose statements are bounded by {@link PassContext.rowStatementTimeoutMs} (a credit
 * waiting on a wallet locked elsewhere gives up after it, case C29). A failure is counted on the row by the caller's
 * guard ({@link guardRow}), once, after the rollback (settleTopup counts nothing when given the transaction).
 */
function settleAsReconciler(
  ctx: PassContext,
  entry: LedgerEntry,
  evidence: ChargeEvidence,
  detail: string,
): Promise<SettlementOutcome> {
  return inRowTransaction(ctx.rowStatementTimeoutMs, (db) =>
    settleTopup(entry, evidence, { actor: "reconciler", guard: { kind: "status_only" }, detail, db }),
  );
}

/** Counts an outcome and, when asked and the row is finished, stores its response. Returns the outcome. */
async function applySettle(
  ctx: PassContext,
  outcome: SettlementOutcome,
  options: { storeResponse: boolean; pendingCounts: "skipped" | "nothing" },
): Promise<SettlementOutcome> {
  switch (outcome.kind) {
    case "credited":
    case "adjusted":
      ctx.tally.completed += 1;
      break;
    case "failed":
      ctx.tally.failed += 1;
      break;
    case "pending":
      if (options.pendingCounts === "skipped") ctx.tally.skipped += 1;
      break;
    case "unchanged":
      ctx.tally.skipped += 1;
      break;
    case "anomaly":
      ctx.tally.skipped += 1;
      recordAnomaly(ctx, outcome.anomaly);
      break;
  }
  if (options.storeResponse && outcome.kind !== "anomaly") await storeFinishedTopupResponse(outcome.entry);
  return outcome;
}

// ---------------------------------------------------------------------------------------------------------------
// Bank → ledger
// ---------------------------------------------------------------------------------------------------------------

/**
 * Reads the charge list from the cursor and reconciles each charge. Returns false when the list could not be
 * read at all (bank unreachable); the cursor then stays where it was.
 */
async function reconcileBankCharges(ctx: PassContext): Promise<boolean> {
  const bankUrl = ctx.bank.bankUrl;
  const sinceMs = readChargeCursorMs(bankUrl, ctx.lookBackMs);
  const sinceIso = new Date(sinceMs).toISOString();
  // The oldest charge the next pass must see again, and the newest charge dealt with.
  let holdMs: number | null = null;
  let lastSeenMs: number | null = null;
  let startingAfter: string | undefined;
  let readAnyPage = false;

  for (let page = 0; page < ctx.chargePagesMax; page++) {
    const listed = await listChargesSince(sinceIso, { ...ctx.bank, limit: CHARGE_PAGE_LIMIT, startingAfter });
    if (listed.kind === "unknown") {
      noteUnknown(ctx, listed, 0);
      break;
    }
    if (listed.kind === "rejected") {
      recordAnomaly(ctx, {
        kind: "bank_refused",
        merchantRef: null,
        chargeId: null,
        detail: `GET /charges?since answered ${listed.status} ${listed.code}`,
      });
      break;
    }
    readAnyPage = true;
    for (const charge of listed.charges) {
      const createdMs = Date.parse(charge.createdAt);
      const hold = await reconcileCharge(ctx, charge);
      if (Number.isFinite(createdMs)) {
        lastSeenMs = createdMs;
        if (hold && holdMs === null) holdMs = createdMs;
      }
    }
    const last = listed.charges.at(-1);
    if (!listed.hasMore || !last) break;
    startingAfter = last.id;
  }

  if (readAnyPage) {
    const next = holdMs ?? lastSeenMs;
    if (next !== null) writeChargeCursorMs(bankUrl, Math.max(next, sinceMs));
  }
  return readAnyPage;
}

/**
 * Reconciles one bank charge with its ledger row. Returns true when the charge must be looked at again by a
 * later pass (the cursor stays at or before it): still pending at the bank, its row still being worked on, or a
 * finished row whose response the live request may still store.
 */
async function reconcileCharge(ctx: PassContext, charge: BankCharge): Promise<boolean> {
  const parts = parseMerchantRef(charge.merchantRef);
  if (!parts) {
    if (charge.status === "succeeded") {
      ctx.tally.examined += 1;
      ctx.tally.skipped += 1;
      recordAnomaly(ctx, {
        kind: "unknown_merchant_ref",
        merchantRef: charge.merchantRef,
        chargeId: charge.id,
        detail: "a succeeded charge whose merchant reference is not one of our top-ups",
      });
    }
    return false;
  }
  if (ctx.userIds && !ctx.userIds.includes(parts.userId)) return false;
  // Pending: nothing to decide yet; the row (if any) is covered by the ledger-to-bank direction meanwhile.
  if (charge.status === "pending") return true;

  const key = operationKey(parts.userId, "topup", parts.refId);
  let hold = false;
  const subject: Subject = { merchantRef: charge.merchantRef, chargeId: charge.id, entry: null };
  const verdict = await guardRow(ctx, subject, async () => {
    let entry = await findEntryByKey(key);
    // Its row failed earlier in this pass: counted once, tried again by a later pass (the cursor waits for it).
    if (entry && ctx.erroredRows.has(rowKey(entry))) {
      hold = true;
      return "done";
    }
    subject.entry = entry;
    let claimedOrFound: "found" | "lost_claim" = "found";
    if (!entry) {
      // A declined charge without a row moved no money: nothing to record.
      if (charge.status !== "succeeded") return "done";
      ctx.tally.examined += 1;
      const claimed = await claimMissingRow(ctx, charge, key, subject);
      if (claimed.kind !== "lost") return "done";
      // Someone else's: a live request (or another reconciler) committed the row while our claim waited on it.
      entry = claimed.entry;
      claimedOrFound = "lost_claim";
    }
    hold = await reconcileExistingRow(ctx, entry, charge, claimedOrFound);
    return "done";
  });
  // A charge whose work failed is read again by the next pass: the cursor stays at or before it.
  return hold || verdict === "errored";
}

type MissingRowClaim =
  /** This pass claimed the row and settled it from the charge (counted). */
  | { kind: "claimed" }
  /** Someone else's: a live request (or another reconciler) committed the row while our claim waited on it. */
  | { kind: "lost"; entry: LedgerEntry }
  | { kind: "skipped" };

/**
 * Claims the key of a succeeded charge that has no row, exactly as a request would, through the claim runner
 * (lib/ledger `runClaimedOperation`: INSERT ... ON CONFLICT DO NOTHING at READ COMMITTED): if a request holds an
 * uncommitted claim on the key, this waits for it; its commit makes this a loser that reads the request's row without
 * waiting for its response, its rollback lets this claim (contract section 1). A row this pass claimed is ours from
 * the claim on: no request is waiting for it, so it is settled from the charge and its response stored at once.
 * `subject.entry` is the claimed row as soon as there is one (a failure of its settlement is counted on it).
 */
async function claimMissingRow(
  ctx: PassContext,
  charge: BankCharge,
  key: ReturnType<typeof operationKey>,
  subject: Subject,
): Promise<MissingRowClaim> {
  if (charge.currency !== ctx.walletCurrency) {
    ctx.tally.skipped += 1;
    recordAnomaly(ctx, {
      kind: "currency_mismatch",
      merchantRef: charge.merchantRef,
      chargeId: charge.id,
      detail: `a succeeded charge in ${charge.currency} has no row, and the wallet currency is ${ctx.walletCurrency}`,
    });
    return { kind: "skipped" };
  }
  // The same parameters as the request path (lib/topups/create-topup.ts), so a later retry of the user's own
  // request with the same amount replays this row instead of being refused as a different operation.
  const params = { amount: charge.amount, currency: charge.currency };
  const run = await runClaimedOperation<null>({
    key,
    params,
    replayCopy: "none",
    waitMs: 0,
    leaseOwner: ctx.workerId,
    attempt: async ({ leaseOwner }) => {
      const request = { key, amountMinor: charge.amount, currency: charge.currency, params, leaseMs: ctx.leaseMs };
      const entry = await insertClaimOrLose(pool(), { ...request, leaseOwner, actor: "reconciler" });
      return entry ? { kind: "claimed", entry } : { kind: "lost" };
    },
    finish: async (entry) => {
      subject.entry = entry;
      const settled = await settleAsReconciler(
        ctx,
        entry,
        { source: "bank", charge },
        "reconciler: claimed from a succeeded bank charge",
      );
      await applySettle(ctx, settled, { storeResponse: true, pendingCounts: "skipped" });
      return { response: null, replayed: false, detail: null };
    },
  });
  if (run.kind === "won") return { kind: "claimed" };
  subject.entry = run.entry;
  return { kind: "lost", entry: run.entry };
}

/**
 * Settles an existing row from a final (succeeded or declined) charge; returns true to hold the cursor.
 * `how` is `lost_claim` when this pass already counted the charge as examined (its claim lost to another).
 */
async function reconcileExistingRow(
  ctx: PassContext,
  entry: LedgerEntry,
  charge: BankCharge,
  how: "found" | "lost_claim",
): Promise<boolean> {
  const nowMs = Date.now();
  const examine = () => {
    if (how === "found") ctx.tally.examined += 1;
  };
  // The request that claimed the row is gone once its lease has run out (a live request finishes well inside it:
  // LEASE_MS > BANK_TIMEOUT_MS); until then, storing the response is the request's job (contract section 3).
  const requestGone = isTerminal(entry.status)
    ? nowMs - entry.createdAt.getTime() > ctx.leaseMs
    : entry.leaseExpiresAt === null || entry.leaseExpiresAt.getTime() < nowMs;

  if (isTerminal(entry.status)) {
    const agrees =
      (charge.status === "succeeded" && entry.status === "succeeded") ||
      (charge.status === "declined" && entry.status === "failed");
    if (agrees && entry.amountMinor === charge.amount && entry.currency === charge.currency) {
      if (entry.response !== null) return false;
      if (!requestGone) {
        if (how === "lost_claim") ctx.tally.skipped += 1;
        return true;
      }
      examine();
      await storeFinishedTopupResponse(entry);
      ctx.tally.skipped += 1;
      return false;
    }
    // Disagreement with a terminal row: report it (settle refuses to move a terminal row and says why).
    examine();
    await applySettle(
      ctx,
      await settleAsReconciler(ctx, entry, { source: "bank", charge }, "reconciler: from the bank's charge list"),
      {
        storeResponse: false,
        pendingCounts: "skipped",
      },
    );
    return false;
  }

  examine();
  const settled = await applySettle(
    ctx,
    await settleAsReconciler(ctx, entry, { source: "bank", charge }, "reconciler: from the bank's charge list"),
    {
      storeResponse: requestGone,
      pendingCounts: "skipped",
    },
  );
  // An anomaly is reported, not retried: it does not hold the cursor (the audit keeps reporting it).
  if (settled.kind === "anomaly") return false;
  // Hold while the row is unfinished, or finished without a response that its live request has yet to store.
  return !isTerminal(settled.entry.status) || (!requestGone && settled.entry.response === null);
}
