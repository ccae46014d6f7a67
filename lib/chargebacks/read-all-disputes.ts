/**
 * Every dispute the bank has, for the audit (`GET /disputes?since=`, paged; docs/bank-sandbox.md, "Disputes"): the
 * dispute check (lib/chargebacks/audit-disputes.ts) and the bank clearing check (lib/audit/checks/bank-clearing.ts).
 */
import { listDisputesSince, type BankDispute } from "../bank/disputes";
import type { AuditBankOptions } from "../audit/checks/scope";

/** Pages of 1000 disputes read at most: 100,000 disputes; beyond it the checks say they cannot judge. */
const DISPUTE_PAGES_MAX = 100;

export type DisputesRead = { kind: "read"; disputes: BankDispute[] } | { kind: "unreadable"; reason: string };

/**
 * Reads every dispute at `bank`, each once, as it is now. Returns `read`, or `unreadable` with the reason (the bank
 * unreachable or refusing, or more than 100 pages). Never throws for the bank's behaviour.
 */
export async function readAllDisputes(bank: AuditBankOptions): Promise<DisputesRead> {
  const disputes: BankDispute[] = [];
  let since = "1970-01-01T00:00:00Z";
  for (let page = 0; page < DISPUTE_PAGES_MAX; page++) {
    const listed = await listDisputesSince(since, { ...bank, limit: 1000 });
    if (listed.kind === "unknown") return { kind: "unreadable", reason: `bank unreachable (${listed.reason})` };
    if (listed.kind === "rejected") return { kind: "unreadable", reason: `bank refused (${listed.status})` };
    disputes.push(...listed.disputes);
    if (!listed.hasMore) return { kind: "read", disputes };
    since = listed.nextCursor;
  }
  return { kind: "unreadable", reason: `the bank lists more than ${DISPUTE_PAGES_MAX} pages of disputes` };
}
