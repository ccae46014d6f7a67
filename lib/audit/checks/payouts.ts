/**
 * The payouts against the bank's own word (contract sections 7 and 14; docs/decisions/060), payout by payout:
 * - every payout the bank paid (or paid and then returned) is posted exactly once: its row `succeeded`, with one
 *   `settle` transaction (the postings' key refuses a second);
 * - nothing the bank paid was given back: a row `failed` (its hold released) whose payout the bank paid or returned;
 * - nothing the bank failed was posted: a row `succeeded` whose payout the bank failed;
 * - every return is credited once: a payout the bank returned has exactly one `payout_return` entry, and no
 *   `payout_return` exists for a payout the bank did not return;
 * - every held amount belongs to an unfinished payout: per user, `payouts_in_flight`'s postings sum to the amounts of
 *   the user's payouts still `initiated` or `processing`;
 * - no bank payout without a row (money that left without a ledger entry).
 * A payout the bank changed more recently than STUCK_AFTER_S is not judged yet (its webhook or the reconciler may be
 * on the way). An unreadable bank fails the check.
 */
import { parsePayoutMerchantRef } from "../../bank/merchant-ref";
import type { BankPayout } from "../../bank/payouts-client";
import { pool } from "../../db";
import { readAllPayouts } from "../../payouts/read-all-payouts";
import { AUDIT_VIOLATIONS_MAX, type AuditCheck } from "../types";
import { checkResult, WHOLE_LEDGER, type AuditBankOptions, type AuditScope } from "./scope";

export const PAYOUTS_CHECK_NAME = "payouts_match_bank";

// $1 user ids or null. Every payout row with its settle count and its return, keyed by its merchant reference parts.
const PAYOUT_ROWS_SQL = `
SELECT e.user_id, e.ref_id, e.status, e.bank_charge_id,
       (SELECT count(*)::int FROM ledger_postings p
         WHERE p.user_id = e.user_id AND p.entry_id = e.id AND p.event = 'settle' AND p.account = 'bank_clearing')
         AS settles,
       (SELECT count(*)::int FROM ledger_entries r
         WHERE r.user_id = e.user_id AND r.type = 'payout_return' AND r.ref_id = e.ref_id) AS returns
  FROM ledger_entries e
 WHERE e.type = 'payout' AND ($1::text[] IS NULL OR e.user_id = ANY ($1::text[]))`;

// $1 user ids or null, $2 limit. Per user: the held account against the unfinished payouts.
const HELD_SQL = `
WITH held AS (
  SELECT user_id, SUM(amount_minor::numeric) AS held_minor FROM ledger_postings
   WHERE account = 'payouts_in_flight' AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
   GROUP BY user_id
), unfinished AS (
  SELECT user_id, SUM(amount_minor::numeric) AS unfinished_minor FROM ledger_entries
   WHERE type = 'payout' AND status IN ('initiated', 'processing')
     AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
   GROUP BY user_id
)
SELECT COALESCE(h.user_id, u.user_id) AS user_id, COALESCE(h.held_minor, 0)::text AS held_minor,
       COALESCE(u.unfinished_minor, 0)::text AS unfinished_minor
  FROM held h FULL OUTER JOIN unfinished u ON u.user_id = h.user_id
 WHERE COALESCE(h.held_minor, 0) <> COALESCE(u.unfinished_minor, 0)
 ORDER BY 1
 LIMIT $2`;

interface PayoutRow {
  user_id: string;
  ref_id: string;
  status: string;
  bank_charge_id: string | null;
  settles: number;
  returns: number;
}

/** What is wrong between one row and the bank's payout for its key (either may be missing), or null. */
function judge(row: PayoutRow | undefined, payout: BankPayout | undefined): string | null {
  const paid = payout?.status === "paid" || payout?.status === "returned";
  if (row === undefined) return payout ? `bank payout ${payout.id} (${payout.status}) has no payout row` : null;
  const name = `payout ${row.ref_id} of user ${row.user_id}`;
  if (paid && row.status === "failed")
    return `${name}: the bank paid it (${payout!.id}), the ledger gave the hold back`;
  if (paid && row.status === "succeeded" && row.settles !== 1) return `${name}: paid, posted ${row.settles} times`;
  if (!paid && row.status === "succeeded")
    return `${name}: posted as paid, the bank says ${payout ? payout.status : "it has no such payout"}`;
  const returned = payout?.status === "returned";
  if (returned !== (row.returns === 1) || row.returns > 1)
    return `${name}: the bank ${returned ? "returned" : "did not return"} it, ${row.returns} return credits`;
  if (payout && row.status !== "succeeded" && row.status !== "failed" && payout.status !== "pending")
    return `${name}: the bank says ${payout.status}, the row is still ${row.status}`;
  return null;
}

/**
 * The payout check over `scope`, reading the bank at `bank`; `options.stuckAfterS` excuses a payout the bank changed
 * (or a row made) more recently than that. Violations name the payout. Throws only when the database cannot be queried.
 */
export function createPayoutsCheck(
  bank: AuditBankOptions,
  scope: AuditScope = WHOLE_LEDGER,
  options: { readonly stuckAfterS: number; readonly nowMs?: number },
): AuditCheck {
  return {
    name: PAYOUTS_CHECK_NAME,
    async run() {
      const read = await readAllPayouts(bank);
      if (read.kind !== "read") return checkResult(PAYOUTS_CHECK_NAME, [`${read.reason}: payouts not compared`]);
      const [rows, held] = await Promise.all([
        pool().query<PayoutRow>(PAYOUT_ROWS_SQL, [scope.userIds]),
        pool().query<{ user_id: string; held_minor: string; unfinished_minor: string }>(HELD_SQL, [
          scope.userIds,
          AUDIT_VIOLATIONS_MAX,
        ]),
      ]);
      const byKey = new Map(rows.rows.map((row) => [`${row.user_id}\u0000${row.ref_id}`, row]));
      const banked = new Map<string, BankPayout>();
      for (const payout of read.payouts) {
        const parts = parsePayoutMerchantRef(payout.merchantRef);
        if (!parts || (scope.userIds !== null && !scope.userIds.includes(parts.userId))) continue;
        banked.set(`${parts.userId}\u0000${parts.refId}`, payout);
      }
      const nowMs = options.nowMs ?? Date.now();
      const violations: string[] = [];
      for (const key of new Set([...byKey.keys(), ...banked.keys()])) {
        const payout = banked.get(key);
        if (payout && nowMs - Date.parse(payout.updatedAt) < options.stuckAfterS * 1000) continue;
        const found = judge(byKey.get(key), payout);
        if (found) violations.push(found);
      }
      for (const row of held.rows)
        violations.push(
          `user ${row.user_id}: payouts in flight hold ${row.held_minor}, the unfinished payouts ${row.unfinished_minor}`,
        );
      return checkResult(PAYOUTS_CHECK_NAME, violations);
    },
  };
}
