/**
 * Every payout the bank has, for the audit (`GET /payouts?since=`, paged; docs/bank-sandbox.md, "Payouts"): the payout
 * check (lib/audit/checks/payouts.ts) and the bank clearing check (lib/audit/checks/bank-clearing.ts).
 */
import type { AuditBankOptions } from "../audit/checks/scope";
import { listPayoutsSince, type BankPayout } from "../bank/payouts-client";

/** Pages of 1000 payouts read at most: 100,000 payouts; beyond it the checks say they cannot judge. */
const PAYOUT_PAGES_MAX = 100;

export type PayoutsRead = { kind: "read"; payouts: BankPayout[] } | { kind: "unreadable"; reason: string };

/**
 * Reads every payout at `bank`, each once, as it is now (a payout listed twice, changed while the pages were read,
 * counts in its latest state). Returns `read`, or `unreadable` with the reason (the bank unreachable or refusing, or
 * more than 100 pages). Never throws for the bank's behaviour.
 */
export async function readAllPayouts(bank: AuditBankOptions): Promise<PayoutsRead> {
  const payouts = new Map<string, BankPayout>();
  let since = "1970-01-01T00:00:00Z";
  for (let page = 0; page < PAYOUT_PAGES_MAX; page++) {
    const listed = await listPayoutsSince(since, { ...bank, limit: 1000 });
    if (listed.kind === "unknown") return { kind: "unreadable", reason: `bank unreachable (${listed.reason})` };
    if (listed.kind === "rejected") return { kind: "unreadable", reason: `bank refused (${listed.status})` };
    for (const payout of listed.payouts) payouts.set(payout.id, payout);
    if (!listed.hasMore) return { kind: "read", payouts: [...payouts.values()] };
    since = listed.nextCursor;
  }
  return { kind: "unreadable", reason: `the bank lists more than ${PAYOUT_PAGES_MAX} pages of payouts` };
}
