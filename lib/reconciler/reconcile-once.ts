/**
 * One reconciler pass (contract sections 2, 5 and 7): brings the ledger and the bank back into agreement
 * in both directions, through the same lib/ledger functions as live traffic (claim, guarded transitions,
 * first-writer-wins responses), so the reconciler can collide with a request, a webhook or another reconciler but
 * never race them. This file runs the jobs in order; each is a file of its own: the unfinished entries
 * (./reconcile-unfinished-entries.ts), the bank's charges (./reconcile-bank-charges.ts), the disputes
 * (lib/chargebacks/reconcile-disputes.ts) and the reward counters (lib/rewards/repair-reward-counters.ts). The
 * jobs note what they did (./pass-context.ts), and the result is derived from those outcomes alone
 * (./reconcile-result.ts `tallyPass`).
 *
 * Policy (re-drive window, cancel-then-fail-as-expired, cursor look-back):
 * docs/decisions/003-failure-and-recovery-policy.md.
 */
import { reconcileDisputes } from "../chargebacks/reconcile-disputes";
import { reconcileBankPayouts } from "../payouts/reconcile-bank-payouts";
import { env } from "../env";
import { countExpiredUnfinishedEntries, WORKER_ID } from "../ledger";
import { log } from "../log";
import { countReconcilePass } from "../metrics/registry";
import { repairRewardCounters } from "../rewards/repair-reward-counters";
import { describeSettleError } from "../topups/settle-topup";
import { CHARGE_LOOK_BACK_MS_DEFAULT } from "./charge-cursor";
import { note, type PassContext, type ReconcileOptions } from "./pass-context";
import { reconcileBankCharges } from "./reconcile-bank-charges";
import { tallyPass, type ReconcileResult, type ReconcileStep } from "./reconcile-result";
import { reconcileUnfinishedEntries } from "./reconcile-unfinished-entries";
import { DatabaseUnreachableError } from "./isolate-row";
import { judgeRowError, rowStatementTimeoutMs } from "./row-guard";

export type { ReconcileLogger, ReconcileOptions } from "./pass-context";
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

/**
 * Runs one pass, ledger → bank then bank → ledger.
 *
 * Ledger → bank (./reconcile-unfinished-entries.ts): takes over, one at a time, unfinished top-ups whose lease
 * expired (at most `rowsMax`), asks the bank for the charge of each one's merchant reference, and:
 *  - `succeeded` → completes it with a credit; `declined` → fails it; `pending` → leaves it (charge id attached);
 *  - no charge, row younger than the re-drive window → sends the charge again with the same Idempotency-Key;
 *  - no charge, older → cancels the key at the bank, and fails the row as `expired` only when the bank confirms
 *    no charge exists (when the cancel reports a charge, the row is settled from that charge);
 *  - bank unreachable → leaves the row and reports it (contract 7.5). A failed read stops the direction (the
 *    bank is down); a failed write (re-drive, cancel) leaves that row only.
 * Bank → ledger (./reconcile-bank-charges.ts): reads the charges created since this process's cursor (24 h back at
 * first); a succeeded charge whose row is missing is claimed under the same key (so it collides with a live request
 * instead of racing it), completed and given its stored response; an unfinished row is settled; a failed row with a
 * succeeded charge, or any amount/currency mismatch, is an anomaly and credits nothing.
 * Whenever the reconciler finishes a row whose request is gone, it stores the 201 `{ topup: T }` response first-
 * writer-wins, so a retry of the original request replays (case C12).
 *
 * Then the disputes changed at the bank since this process's dispute cursor (lib/chargebacks/reconcile-disputes.ts),
 * and the reward counters a Redis failover left below the ledger (docs/decisions/016).
 *
 * Rewards and payments are single-transaction and never unfinished; one found unfinished is reported as an
 * anomaly and left alone. Refund rows left in flight are finished through lib/refunds/reconcile-refund.ts.
 *
 * One row cannot stop the pass (case C29). A row's settlement runs in a transaction whose statements are bounded by
 * ./row-guard.ts `rowStatementTimeoutMs` (2 s: a wallet locked for minutes costs that row one bounded wait, not the
 * pass); whatever the row's work throws (a constraint, a timeout, an unexpected SQLSTATE, a bug) is logged naming its
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
  const pass = newPass(options);
  try {
    await runJobs(pass);
  } catch (error) {
    if (!(error instanceof DatabaseUnreachableError)) throw error;
    note(pass, { kind: "database_unreachable", step: pass.step, reason: describeSettleError(error.error) });
    // The pass stopped: an operator must look (the next pass starts over; nothing it left is lost).
    log().error(
      { err: error.error, step: pass.step, reconcile: tallyPass(pass.outcomes) },
      "reconciler pass stopped: the database cannot be reached",
    );
  }
  const result = tallyPass(pass.outcomes);
  countReconcilePass(result);
  // A quiet pass (the demo runs one every 10 s) is not logged; one that did or found something is.
  if (result.examined > 0 || result.anomalies || result.bankUnreachable)
    pass.logger.info({ reconcile: result }, "reconciler pass finished");
  return result;
}

/** A pass with `options` resolved against the environment, and nothing done yet. */
function newPass(options: ReconcileOptions): PassContext {
  const settings = env();
  return {
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
    rowStatementTimeoutMs: rowStatementTimeoutMs(),
    step: "ledger_to_bank",
    erroredRows: new Set(),
    outcomes: [],
  };
}

/**
 * The pass's jobs in order, each guarded as a step ({@link guardStep}). A bank that could not be read by the first
 * job stops the bank's side of the pass: its charges are not listed and its disputes not read (the rows it left are
 * counted instead). Throws {@link DatabaseUnreachableError} when the database cannot be reached.
 */
async function runJobs(pass: PassContext): Promise<void> {
  const unfinished = await guardStep(pass, "ledger_to_bank", () => reconcileUnfinishedEntries(pass));
  const bankDown = unfinished.ok && unfinished.value;
  let chargesUnlisted = bankDown;
  if (!bankDown) {
    const charges = await guardStep(pass, "bank_to_ledger", () => reconcileBankCharges(pass));
    // A step that failed inside the app is reported on its own; only a bank that could not be read is "unlisted".
    chargesUnlisted = charges.ok && !charges.value;
  }
  if (chargesUnlisted) note(pass, { kind: "charges_unlisted" });
  // Disputes the webhooks missed (contract section 12): lost ones debit once, reversed ones credit back once.
  else {
    await guardStep(pass, "disputes", () => reconcileDisputesOfPass(pass));
    // Payouts the webhooks missed (contract section 14): paid ones posted, failed ones given back, returns credited.
    await guardStep(pass, "payouts", () => reconcilePayoutsOfPass(pass));
  }
  if (bankDown) {
    const remaining = await guardStep(pass, "ledger_to_bank", () => countExpiredUnfinishedEntries(pass.userIds));
    if (remaining.ok) note(pass, { kind: "rows_left", rowsLeft: remaining.value });
  }
  // Reward counters a Redis failover left below the ledger are raised back (docs/decisions/016).
  await guardStep(pass, "reward_counters", () => repairRewardCounters({ userIds: pass.userIds }));
}

/**
 * Runs one step of the pass. An error outside any row's guard (the take-over statement, a listing, a bug) is
 * reported as a `row_error` anomaly without a merchant reference (`errored`), and the pass goes on with the next
 * step: `{ ok: false }`. Throws {@link DatabaseUnreachableError} when the database cannot be reached.
 */
async function guardStep<T>(
  pass: PassContext,
  step: ReconcileStep,
  work: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false }> {
  pass.step = step;
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    if (error instanceof DatabaseUnreachableError) throw error;
    if ((await judgeRowError(error)) === "database_unreachable") throw new DatabaseUnreachableError(error);
    pass.logger.warn({ err: error, step }, "reconciler: a step failed; the pass goes on with the next one");
    const detail = `the ${step.replaceAll("_", " ")} step failed outside any row: ${describeSettleError(error)}`;
    note(pass, { kind: "errored", anomaly: { kind: "row_error", merchantRef: null, chargeId: null, detail } });
    return { ok: false };
  }
}

/**
 * The payout step (lib/payouts/reconcile-bank-payouts.ts): each row it moved counts as `completed`; a bank payout
 * without a row, or disagreeing with its row, is a `payout_mismatch` naming its merchant reference and payout id.
 */
async function reconcilePayoutsOfPass(pass: PassContext): Promise<void> {
  const payouts = await reconcileBankPayouts(pass);
  for (let i = 0; i < payouts.applied; i++) note(pass, { kind: "completed" });
  for (const anomaly of payouts.anomalies) {
    const { merchantRef, payoutId, detail } = anomaly;
    note(pass, { kind: "left", anomaly: { kind: "payout_mismatch", merchantRef, chargeId: payoutId, detail } });
  }
}

/**
 * The dispute step (lib/chargebacks/reconcile-disputes.ts): each dispute whose entries the database refused or
 * failed is reported as a `row_error` naming its charge's merchant reference and charge id (`errored`).
 */
async function reconcileDisputesOfPass(pass: PassContext): Promise<void> {
  const disputes = await reconcileDisputes(pass);
  for (const failure of disputes.errors) {
    const { merchantRef, chargeId } = failure;
    const detail = `dispute ${failure.disputeId}: ${failure.detail}`;
    note(pass, { kind: "errored", anomaly: { kind: "row_error", merchantRef, chargeId, detail } });
  }
}
