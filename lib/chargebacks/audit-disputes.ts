/**
 * The audit's dispute check (contract section 12): every dispute the bank lost more than STUCK_AFTER_S ago has
 * exactly one succeeded `chargeback` entry, every one it reversed that long ago exactly one `chargeback_reversal`,
 * and no entry exists for a dispute the bank does not report that way. The entries are keyed by the dispute id, so
 * "exactly one" is the claim index's promise; what this check catches is a dispute nobody landed (webhooks lost and
 * the reconciler not running) or money moved on a dispute the bank never lost.
 */
import { pool } from "../db";
import { parseMerchantRef } from "../bank/merchant-ref";
import type { AuditCheck } from "../audit/types";
import { checkResult, WHOLE_LEDGER, type AuditBankOptions, type AuditScope } from "../audit/checks/scope";
import { disputeWasLost, disputeWasReversed } from "./apply-dispute";
import { readAllDisputes } from "./read-all-disputes";

export const DISPUTES_CHECK_NAME = "lost_disputes_charged_back";

const DISPUTE_ENTRIES_SQL = `
SELECT user_id, type, ref_id, status FROM ledger_entries
 WHERE type IN ('chargeback', 'chargeback_reversal')
   AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))`;

/**
 * The dispute check over `scope`, reading the bank at `bank`. `options.stuckAfterS` (STUCK_AFTER_S) excuses a
 * dispute lost (or reversed) more recently than that: its webhook or the next reconciler pass may still be on the
 * way. An unreadable bank fails the check. Throws only when the database cannot be queried.
 */
export function createDisputesCheck(
  bank: AuditBankOptions,
  scope: AuditScope = WHOLE_LEDGER,
  options: { readonly stuckAfterS: number; readonly nowMs?: number },
): AuditCheck {
  return {
    name: DISPUTES_CHECK_NAME,
    async run() {
      const read = await readAllDisputes(bank);
      if (read.kind === "unreadable")
        return checkResult(DISPUTES_CHECK_NAME, [`${read.reason}: disputes cannot be judged`]);
      const rows = await pool().query<{ user_id: string; type: string; ref_id: string; status: string }>(
        DISPUTE_ENTRIES_SQL,
        [scope.userIds],
      );
      const entries = new Map(rows.rows.map((r) => [`${r.user_id}\n${r.type}\n${r.ref_id}`, r.status]));
      const nowMs = options.nowMs ?? Date.now();
      const judged = (iso: string | null) =>
        iso !== null && !(Math.floor((nowMs - Date.parse(iso)) / 1000) < options.stuckAfterS);
      const violations: string[] = [];
      const expected = new Set<string>();
      for (const dispute of read.disputes) {
        const userId = parseMerchantRef(dispute.merchantRef)?.userId;
        if (userId === undefined || (scope.userIds !== null && !scope.userIds.includes(userId))) continue;
        const wants: Array<["chargeback" | "chargeback_reversal", boolean, string | null]> = [
          ["chargeback", disputeWasLost(dispute), dispute.lostAt],
          ["chargeback_reversal", disputeWasReversed(dispute), dispute.closedAt],
        ];
        for (const [type, wanted, since] of wants) {
          const key = `${userId}\n${type}\n${dispute.id}`;
          const status = entries.get(key);
          if (wanted) expected.add(key);
          if (wanted && status !== "succeeded" && judged(since))
            violations.push(
              `dispute ${dispute.id} (${dispute.merchantRef}, ${dispute.amount} ${dispute.currency}) is ${dispute.status} at the bank but its ${type} is ${status ?? "missing"}`,
            );
          if (!wanted && status !== undefined)
            violations.push(
              `dispute ${dispute.id} is ${dispute.status} at the bank but has a ${type} entry (${status})`,
            );
        }
      }
      const disputeIds = new Set(read.disputes.map((d) => d.id));
      for (const row of rows.rows)
        if (!disputeIds.has(row.ref_id))
          violations.push(`${row.type} ${row.ref_id} of user ${row.user_id}: the bank has no such dispute`);
      return checkResult(DISPUTES_CHECK_NAME, violations);
    },
  };
}
