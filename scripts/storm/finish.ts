/**
 * The end of a storm: let the bank deliver what it still owes, let the leases of rows orphaned by the crash
 * expire, run reconciler passes until nothing is left (bounded), then run the audit of contract section 7 and read
 * the ledger and the bank for the client-side checks.
 *
 * The reconciler and the audit are the project's own (lib/reconciler/reconcile-once.ts, lib/audit/run-audit.ts),
 * loaded only when present so the storm still runs, and says what it could not check, while they are being written.
 * They read their settings through lib/env.ts: the storm sets DATABASE_URL, BANK_URL, ... before loading them.
 */
import type { Pool } from "pg";
import { listChargesSince } from "../../lib/bank/client";
import { listDisputesSince } from "../../lib/bank/disputes";
import { parsePayoutMerchantRef } from "../../lib/bank/merchant-ref";
import { listPayoutsSince } from "../../lib/bank/payouts-client";
import { sleep } from "../lib/ports";
import { getJson, postControl } from "./http-client";
import type { BankCharge, BankDisputeSeen, BankPayoutSeen, CheckResult, LedgerRow } from "./client-checks";

/**
 * How long the bank may take to deliver its pending webhooks once traffic stopped: 30 s. With the storm's schedule
 * (retries from 250 ms to 2 s, 8 attempts) and "retry now" pushed every poll, a healthy app takes a second or two;
 * deliveries still pending after 30 s are left to the reconciler, which is exactly what it is for.
 */
const DRAIN_MS_MAX = 30_000;
/** Poll interval of the drain: 250 ms, a fraction of the bank's smallest retry back-off. */
const DRAIN_POLL_MS = 250;
/** Budget of one control call to the bank: 2 s (a local call answers in milliseconds). */
const CONTROL_TIMEOUT_MS = 2000;

/**
 * Longest wait for the leases of unfinished rows to expire before the final passes: the storm's LEASE_MS (5 s)
 * plus 2 s of slack for clock granularity. A row claimed just before traffic stopped is taken over after it.
 */
const LEASE_WAIT_MS_MAX = 7_000;

/**
 * Final reconciler passes: at most 8, stopping as soon as a pass examines nothing and no unfinished row is left.
 * A pass takes over up to 200 rows; the storm's crash leaves a few dozen, and a row whose charge is still `pending`
 * at the bank needs one more pass after the bank settles it (100 ms later): two or three passes are the norm.
 */
const FINAL_PASSES_MAX = 8;
/**
 * Lease taken by the final passes, in ms: 1 s (the lower bound of LEASE_MS). A row left `pending` by one pass can
 * be taken over again by the next pass one second later instead of after the storm's 5 s.
 */
const FINAL_PASS_LEASE_MS = 1000;

/** Pages of the bank's charge list read for the client checks: 100 x 1000 charges, far above a storm's few thousand. */
const CHARGE_PAGES_MAX = 100;
/** The bank's largest page (docs/bank-sandbox.md): fewest round trips. */
const CHARGE_PAGE_LIMIT = 1000;
/**
 * Budget of one page request: 10 s. A page of 1000 charges is ~250 KB of JSON from a local process; the bound only
 * turns a hung bank into an error instead of a hung storm.
 */
const CHARGE_PAGE_TIMEOUT_MS = 10_000;

export interface DrainResult {
  readonly pendingLeft: number | null;
  readonly waitedMs: number;
}

/**
 * Waits until the bank has no pending webhook delivery (pushing their retries to "now" on every poll), at most
 * {@link DRAIN_MS_MAX}. Returns how many were still pending (null when the bank's health could not be read).
 */
export async function drainWebhooks(bankUrl: string): Promise<DrainResult> {
  const startedMs = Date.now();
  let pending: number | null = null;
  while (Date.now() - startedMs < DRAIN_MS_MAX) {
    const health = (await getJson(`${bankUrl}/health`, CONTROL_TIMEOUT_MS)) as { pendingDeliveries?: number } | null;
    pending = typeof health?.pendingDeliveries === "number" ? health.pendingDeliveries : null;
    if (pending === 0) break;
    await postControl(`${bankUrl}/_sandbox/deliveries/retry-now`, {}, CONTROL_TIMEOUT_MS);
    await sleep(DRAIN_POLL_MS);
  }
  return { pendingLeft: pending, waitedMs: Date.now() - startedMs };
}

/** Unfinished rows of `userIds` and how long until the last of their leases expires (ms, 0 when none is live). */
export async function unfinishedRows(
  db: Pool,
  userIds: readonly string[],
): Promise<{ count: number; leaseLeftMs: number }> {
  const result = await db.query<{ count: string; lease_left_ms: string | null }>(
    `SELECT count(*)::text AS count,
            ceil(extract(epoch FROM max(lease_expires_at) - now()) * 1000)::text AS lease_left_ms
       FROM ledger_entries
      WHERE status IN ('initiated', 'processing') AND user_id = ANY ($1::text[])`,
    [userIds],
  );
  const row = result.rows[0]!;
  return { count: Number(row.count), leaseLeftMs: Math.max(0, Number(row.lease_left_ms ?? 0)) };
}

/** Sleeps until every unfinished row's lease has expired, at most {@link LEASE_WAIT_MS_MAX}. Returns the wait. */
export async function waitForLeases(db: Pool, userIds: readonly string[]): Promise<number> {
  const { count, leaseLeftMs } = await unfinishedRows(db, userIds);
  if (count === 0 || leaseLeftMs === 0) return 0;
  // 50 ms past the expiry: the reconciler compares with the database clock, `lease_expires_at < now()`.
  const waitMs = Math.min(leaseLeftMs + 50, LEASE_WAIT_MS_MAX);
  await sleep(waitMs);
  return waitMs;
}

/** What the final reconciler passes did, summed. */
export interface FinalReconcile {
  readonly passes: number;
  readonly examined: number;
  readonly completed: number;
  readonly failed: number;
  readonly redriven: number;
  readonly anomalies: string[];
  readonly bankUnreachable: string | null;
  /** Unfinished rows left after the last pass. */
  readonly unfinishedLeft: number;
}

/** A logger for the in-process passes that keeps their lines out of the storm's output. */
const quietLogger = { info: () => {}, warn: () => {} };

/**
 * Runs reconciler passes (scoped to the storm's users) until one examines nothing and no unfinished row is left,
 * at most {@link FINAL_PASSES_MAX}; waits for expired leases between passes. Returns the summed counts.
 */
export async function reconcileUntilQuiet(
  db: Pool,
  userIds: readonly string[],
  bankUrl: string,
): Promise<FinalReconcile> {
  const { reconcileOnce } = await import("../../lib/reconciler/reconcile-once");
  const totals = { passes: 0, examined: 0, completed: 0, failed: 0, redriven: 0 };
  const anomalies: string[] = [];
  let bankUnreachable: string | null = null;
  for (let pass = 0; pass < FINAL_PASSES_MAX; pass++) {
    await waitForLeases(db, userIds);
    const result = await reconcileOnce({ bankUrl, userIds, leaseMs: FINAL_PASS_LEASE_MS, logger: quietLogger });
    totals.passes += 1;
    totals.examined += result.examined;
    totals.completed += result.completed;
    totals.failed += result.failed;
    totals.redriven += result.redriven;
    for (const anomaly of result.anomalies ?? [])
      anomalies.push(`${anomaly.kind} ${anomaly.merchantRef ?? ""}: ${anomaly.detail}`);
    bankUnreachable = result.bankUnreachable
      ? `${result.bankUnreachable.reason} (${result.bankUnreachable.rowsLeft} rows left)`
      : null;
    const left = await unfinishedRows(db, userIds);
    if (result.examined === 0 && left.count === 0) break;
  }
  return { ...totals, anomalies, bankUnreachable, unfinishedLeft: (await unfinishedRows(db, userIds)).count };
}

/** The audit's results. */
export interface AuditOutcome {
  readonly checks: CheckResult[];
  /** Notes about the audit's scope. */
  readonly notes: string[];
}

/**
 * Runs the audit of contract section 7 through lib/audit/run-audit.ts. When the storm owns the database the whole
 * ledger is audited; against given services, only the storm's users.
 */
export async function runContractAudit(options: {
  bankUrl: string;
  userIds: readonly string[] | null;
}): Promise<AuditOutcome> {
  const { defaultAuditChecks, runAudit } = await import("../../lib/audit/run-audit");
  const scope = { bankUrl: options.bankUrl, ...(options.userIds ? { userIds: options.userIds } : {}) };
  const checks = defaultAuditChecks(scope);
  const notes: string[] = options.userIds ? [`audit scoped to the storm's ${options.userIds.length} users`] : [];
  const report = await runAudit({ ...scope, checks });
  return {
    notes,
    checks: report.checks.map((check) => ({
      name: `audit: ${check.name}`,
      ok: check.ok,
      scope: "",
      violations: check.violations.slice(0, 20),
    })),
  };
}

/** The ledger rows of `userIds` (one query; a storm has a few tens of thousands at most). */
export async function readLedgerRows(db: Pool, userIds: readonly string[]): Promise<LedgerRow[]> {
  const result = await db.query<{
    user_id: string;
    entry_id: string;
    type: LedgerRow["type"];
    ref_id: string;
    topup_ref_id: string | null;
    amount_minor: string;
    status: LedgerRow["status"];
    failure_reason: string | null;
    response_status: number | null;
    response_body: string | null;
  }>(
    // An adjustment is keyed by its charge id; the checks read it under the ref id of the top-up it settles.
    // A refund keeps its own ref id (the refundId) and names its top-up through refunds_entry_id.
    `SELECT e.user_id, e.id::text AS entry_id, e.type, coalesce(t.ref_id, e.ref_id) AS ref_id, r.ref_id AS topup_ref_id,
            e.amount_minor::text AS amount_minor, e.status, e.failure_reason, e.response_status, e.response_body
       FROM ledger_entries e
       LEFT JOIN ledger_entries t ON t.user_id = e.user_id AND t.id = e.adjusts_entry_id
       LEFT JOIN ledger_entries r ON r.user_id = e.user_id AND r.id = e.refunds_entry_id
      WHERE e.user_id = ANY ($1::text[])`,
    [userIds],
  );
  return result.rows.map((row) => ({
    userId: row.user_id,
    entryId: row.entry_id,
    type: row.type,
    refId: row.ref_id,
    topupRefId: row.topup_ref_id,
    amountMinor: Number(row.amount_minor),
    status: row.status,
    failureReason: row.failure_reason,
    responseStatus: row.response_status,
    responseBody: row.response_body,
  }));
}

/** Every charge the bank holds (paged, bounded). Throws when the bank cannot be read. */
export async function readBankCharges(bankUrl: string): Promise<BankCharge[]> {
  const charges: BankCharge[] = [];
  let startingAfter: string | undefined;
  for (let page = 0; page < CHARGE_PAGES_MAX; page++) {
    const listed = await listChargesSince("1970-01-01T00:00:00.000Z", {
      bankUrl,
      timeoutMs: CHARGE_PAGE_TIMEOUT_MS,
      limit: CHARGE_PAGE_LIMIT,
      startingAfter,
    });
    if (listed.kind !== "page") throw new Error(`could not list the bank's charges: ${JSON.stringify(listed)}`);
    charges.push(
      ...listed.charges.map((charge) => ({
        id: charge.id,
        merchantRef: charge.merchantRef,
        amount: charge.amount,
        status: charge.status,
      })),
    );
    const last = listed.charges.at(-1);
    if (!listed.hasMore || !last) return charges;
    startingAfter = last.id;
  }
  throw new Error(`the bank holds more than ${CHARGE_PAGES_MAX} pages of charges`);
}

/** Every dispute the bank holds, as it is now (paged like the charges, bounded). Throws when the bank cannot be read. */
export async function readBankDisputes(bankUrl: string): Promise<BankDisputeSeen[]> {
  const disputes = new Map<string, BankDisputeSeen>();
  let since = "1970-01-01T00:00:00.000Z";
  for (let page = 0; page < CHARGE_PAGES_MAX; page++) {
    const listed = await listDisputesSince(since, {
      bankUrl,
      timeoutMs: CHARGE_PAGE_TIMEOUT_MS,
      limit: CHARGE_PAGE_LIMIT,
    });
    if (listed.kind !== "page") throw new Error(`could not list the bank's disputes: ${JSON.stringify(listed)}`);
    // A dispute that changed while paging shows again later, as it is then: the last one seen wins.
    for (const dispute of listed.disputes) {
      const { id, merchantRef, amount, status, lostAt } = dispute;
      disputes.set(id, { id, merchantRef, amount, status, lostAt });
    }
    if (!listed.hasMore) return [...disputes.values()];
    since = listed.nextCursor;
  }
  throw new Error(`the bank holds more than ${CHARGE_PAGES_MAX} pages of disputes`);
}

/** Every payout the bank holds, as it is now (paged like the disputes, bounded). Throws when the bank cannot be read. */
export async function readBankPayouts(bankUrl: string): Promise<BankPayoutSeen[]> {
  const payouts = new Map<string, BankPayoutSeen>();
  let since = "1970-01-01T00:00:00.000Z";
  for (let page = 0; page < CHARGE_PAGES_MAX; page++) {
    const listed = await listPayoutsSince(since, {
      bankUrl,
      timeoutMs: CHARGE_PAGE_TIMEOUT_MS,
      limit: CHARGE_PAGE_LIMIT,
    });
    if (listed.kind !== "page") throw new Error(`could not list the bank's payouts: ${JSON.stringify(listed)}`);
    // A payout that changed while paging shows again later, as it is then: the last one seen wins.
    for (const { id, merchantRef, amount, status } of listed.payouts)
      payouts.set(id, { id, merchantRef, amount, status });
    if (!listed.hasMore) return [...payouts.values()];
    since = listed.nextCursor;
  }
  throw new Error(`the bank holds more than ${CHARGE_PAGES_MAX} pages of payouts`);
}

/**
 * The storm's payout switches whose payouts the bank pays and then returns (docs/bank-sandbox.md "Payouts"):
 * `BANK_PAYOUT_RETURN_DELAY_MS` (3 s by default) after they were paid.
 */
const RETURNING_PAYOUT_PREFIXES = ["sbx-po-return-", "sbx-po-reorder-"] as const;

/**
 * How long the bank may take to finish the storm's payouts once traffic stopped: 20 s. A payout settles
 * BANK_WEBHOOK_DELAY_MS (100 ms) after it was made and a returning one is returned BANK_PAYOUT_RETURN_DELAY_MS (3 s by
 * default) after that; the bound only keeps a stuck bank from stalling the storm (the checks then say what is left).
 */
const PAYOUT_SETTLE_MS_MAX = 20_000;
/** Poll interval while waiting for the bank's payouts: 250 ms, like the drain's. */
const PAYOUT_SETTLE_POLL_MS = 250;

export interface PayoutSettleResult {
  /** The storm's payouts still `pending` at the bank, and those of a returning switch not yet returned. */
  readonly pendingLeft: number;
  readonly returnsLeft: number;
  readonly waitedMs: number;
}

/**
 * Waits until the bank has finished the payouts of `userIds`: none `pending`, and every payout of a returning switch
 * ({@link RETURNING_PAYOUT_PREFIXES}) `returned` (or `failed`), at most {@link PAYOUT_SETTLE_MS_MAX}. The bank's events
 * for them (`payout.paid`, `payout.returned`) are then queued, for the drain and the reconciler to finish.
 */
export async function waitForBankPayouts(bankUrl: string, userIds: readonly string[]): Promise<PayoutSettleResult> {
  const storm = new Set(userIds);
  const startedMs = Date.now();
  let pendingLeft = 0;
  let returnsLeft = 0;
  for (;;) {
    pendingLeft = 0;
    returnsLeft = 0;
    for (const payout of await readBankPayouts(bankUrl)) {
      const parts = parsePayoutMerchantRef(payout.merchantRef);
      if (!parts || !storm.has(parts.userId)) continue;
      if (payout.status === "pending") pendingLeft += 1;
      else if (payout.status === "paid" && RETURNING_PAYOUT_PREFIXES.some((prefix) => parts.refId.startsWith(prefix)))
        returnsLeft += 1;
    }
    if ((pendingLeft === 0 && returnsLeft === 0) || Date.now() - startedMs >= PAYOUT_SETTLE_MS_MAX) break;
    await sleep(PAYOUT_SETTLE_POLL_MS);
  }
  return { pendingLeft, returnsLeft, waitedMs: Date.now() - startedMs };
}
