/**
 * The reconciler's payout direction (contract section 14; docs/decisions/060): reads the bank's payouts changed since
 * this process's cursor (`GET /payouts?since=`, paged) and applies each through the same settlement as the request and
 * the webhook (lib/payouts/settle-payout.ts), so a payout whose webhooks were lost is still posted, given back or
 * credited back when the bank returns it, and one whose webhook is being applied right now meets it on the row's
 * guarded move (one final state) or on the return's claim (one credit).
 *
 * The cursor lives in memory per bank URL and scope, like the dispute cursor (lib/chargebacks/reconcile-disputes.ts):
 * a new process starts `lookBackMs` back and finds what it re-reads already applied (nothing moves twice).
 */
import type { BankCallOptions } from "../bank/client";
import { parsePayoutMerchantRef } from "../bank/merchant-ref";
import { listPayoutsSince, type BankPayout } from "../bank/payouts-client";
import { findEntryByKey, isTerminal, operationKey } from "../ledger";
import { settlePayout, storePayoutResponse } from "./settle-payout";

/** The bank's largest page, and the most pages one pass reads (the rest waits for the next pass). */
const PAYOUT_PAGE_LIMIT = 1000;
const PAYOUT_PAGES_MAX = 10;

const cursors = new Map<string, string>();

/** Forgets every payout cursor (tests; a process restart does the same). */
export function resetPayoutCursors(): void {
  cursors.clear();
}

export interface PayoutPassOptions {
  readonly bank: BankCallOptions;
  /** Only these users' payouts (tests sharing a bank and a database); null for everyone. */
  readonly userIds: readonly string[] | null;
  /** How far back a fresh process reads, ms. */
  readonly lookBackMs: number;
}

export interface PayoutPassResult {
  /** Payouts read from the bank (in scope). */
  listed: number;
  /** Rows this pass moved: posted, given back or credited back. */
  applied: number;
  /** Bank payouts that moved nothing and must be looked at: no row for their key, or disagreeing with it. */
  anomalies: { readonly merchantRef: string; readonly payoutId: string; readonly detail: string }[];
  /** Why the listing stopped early (the bank did not answer), or null. */
  bankUnreachable: string | null;
}

/**
 * One pass over the bank's changed payouts. Returns the counts and the anomalies. Throws database errors (the
 * reconciler's step guard reports them; the cursor has not moved past the payout that failed).
 */
export async function reconcileBankPayouts(options: PayoutPassOptions): Promise<PayoutPassResult> {
  const result: PayoutPassResult = { listed: 0, applied: 0, anomalies: [], bankUnreachable: null };
  const scope = `${options.bank.bankUrl}|${options.userIds ? [...options.userIds].sort().join(",") : "*"}`;
  let since = cursors.get(scope) ?? new Date(Date.now() - options.lookBackMs).toISOString();
  for (let page = 0; page < PAYOUT_PAGES_MAX; page++) {
    const listed = await listPayoutsSince(since, { ...options.bank, limit: PAYOUT_PAGE_LIMIT });
    if (listed.kind !== "page") {
      result.bankUnreachable = listed.kind === "unknown" ? listed.reason : listed.code;
      return result;
    }
    for (const payout of listed.payouts) {
      const userId = parsePayoutMerchantRef(payout.merchantRef)?.userId;
      if (options.userIds && (userId === undefined || !options.userIds.includes(userId))) continue;
      result.listed += 1;
      await applyOne(payout, result);
    }
    since = listed.nextCursor;
    cursors.set(scope, since);
    if (!listed.hasMore) break;
  }
  return result;
}

/** Applies one bank payout to its row, counting what it did in `result`. */
async function applyOne(payout: BankPayout, result: PayoutPassResult): Promise<void> {
  const parts = parsePayoutMerchantRef(payout.merchantRef);
  const entry = parts ? await findEntryByKey(operationKey(parts.userId, "payout", parts.refId)) : null;
  if (!entry) {
    const detail = `bank payout ${payout.id} (${payout.status}) has no payout row: money may have left without a ledger entry`;
    result.anomalies.push({ merchantRef: payout.merchantRef, payoutId: payout.id, detail });
    return;
  }
  const settled = await settlePayout(
    entry,
    { source: "bank", payout },
    {
      actor: "reconciler",
      guard: { kind: "status_only" },
      detail: `reconciler: bank payout ${payout.id} is ${payout.status}`,
    },
  );
  if (settled.kind === "anomaly") {
    result.anomalies.push({ merchantRef: payout.merchantRef, payoutId: payout.id, detail: settled.detail });
    return;
  }
  if (settled.kind === "paid" || settled.kind === "released" || settled.kind === "returned") result.applied += 1;
  if (isTerminal(settled.entry.status) && settled.entry.response === null) await storePayoutResponse(settled.entry);
}
