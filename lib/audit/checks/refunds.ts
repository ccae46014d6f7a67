/**
 * Contract section 11's invariants: a top-up's refunds never exceed it, and every refund the bank made has exactly one
 * ledger entry (and every refund entry the bank knows about is that refund).
 */
import type { BankRefund } from "../../bank/refunds-client";
import { pool } from "../../db";
import { refundMerchantRefFor } from "../../refunds/refund-ref";
import type { AuditCheck } from "../types";
import { checkResult, WHOLE_LEDGER, type AuditBankOptions, type AuditScope } from "./scope";

export const REFUNDS_WITHIN_TOPUPS_CHECK_NAME = "refunds_within_topups";
export const BANK_REFUNDS_RECORDED_CHECK_NAME = "bank_refunds_recorded";

// Per top-up with refunds: its recorded reservation (refunded_minor) against the sum of its refunds that did not fail,
// and against its own amount. Sums as numeric, returned as text (a corrupted ledger may pass 2^53).
// $1 user ids or null, $2 limit.
const REFUNDS_WITHIN_TOPUPS_SQL = `
WITH sums AS (
  SELECT r.user_id, r.refunds_entry_id AS topup_id, SUM(r.amount_minor::numeric) AS refunds_minor
    FROM ledger_entries r
   WHERE r.type = 'refund' AND r.status <> 'failed'
     AND ($1::text[] IS NULL OR r.user_id = ANY ($1::text[]))
   GROUP BY r.user_id, r.refunds_entry_id
)
SELECT t.user_id, t.ref_id, t.amount_minor::text AS amount_minor, t.refunded_minor::text AS refunded_minor,
       COALESCE(s.refunds_minor, 0)::text AS refunds_minor, count(*) OVER ()::int AS total
  FROM ledger_entries t
  LEFT JOIN sums s ON s.user_id = t.user_id AND s.topup_id = t.id
 WHERE t.type = 'topup'
   AND ($1::text[] IS NULL OR t.user_id = ANY ($1::text[]))
   AND (t.refunded_minor > 0 OR s.refunds_minor IS NOT NULL)
   AND (t.refunded_minor::numeric <> COALESCE(s.refunds_minor, 0) OR COALESCE(s.refunds_minor, 0) > t.amount_minor
        OR t.status <> 'succeeded')
 ORDER BY 1, 2
 LIMIT $2`;

/** Refunds never exceed their top-up, and the top-up's reservation equals its refunds that did not fail. */
export function createRefundsWithinTopupsCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: REFUNDS_WITHIN_TOPUPS_CHECK_NAME,
    async run() {
      const result = await pool().query(REFUNDS_WITHIN_TOPUPS_SQL, [scope.userIds, 100]);
      const violations = result.rows.map(
        (row) =>
          `top-up ${row.ref_id} of user ${row.user_id}: amount ${row.amount_minor}, reserved ${row.refunded_minor}, refunds not failed ${row.refunds_minor}`,
      );
      return checkResult(REFUNDS_WITHIN_TOPUPS_CHECK_NAME, violations, result.rows[0]?.total ?? violations.length);
    },
  };
}

// Every top-up that has refund entries, with its charge, and its refund entries' keys, amounts, statuses and ids.
const REFUNDED_TOPUPS_SQL = `
SELECT t.user_id, t.bank_charge_id,
       json_agg(json_build_object('refId', r.ref_id, 'amount', r.amount_minor, 'status', r.status,
                                  'bankId', r.bank_charge_id, 'refusedAtClaim', r.status = 'failed' AND r.bank_charge_id IS NULL
                                    AND r.failure_reason IN ('insufficient_funds', 'refund_exceeds_topup'))) AS refunds
  FROM ledger_entries t
  JOIN ledger_entries r ON r.user_id = t.user_id AND r.refunds_entry_id = t.id AND r.type = 'refund'
 WHERE t.type = 'topup' AND t.bank_charge_id IS NOT NULL
   AND ($1::text[] IS NULL OR t.user_id = ANY ($1::text[]))
 GROUP BY t.user_id, t.id, t.bank_charge_id`;

interface RefundRowSummary {
  refId: string;
  amount: number;
  status: string;
  bankId: string | null;
  refusedAtClaim: boolean;
}

/**
 * Every refund the bank made on a refunded top-up's charge has exactly one ledger entry under its key with its amount;
 * a `succeeded` entry has the bank's `succeeded` refund, a `failed` one that reached the bank has its `failed` refund;
 * and a refund the bank finished (succeeded or failed) more than `options.stuckAfterS` (STUCK_AFTER_S) after it was
 * made is not left unfinished in the ledger, whatever its lease (case C28: a give-back the database keeps refusing is
 * reported, as 7.6 reports a charge left uncredited). Asks `GET /refunds?chargeId=` once per refunded top-up; an
 * unreachable bank fails the check.
 */
export function createBankRefundsRecordedCheck(
  bank: AuditBankOptions,
  scope: AuditScope,
  options: { readonly stuckAfterS: number; readonly nowMs?: number },
): AuditCheck {
  return {
    name: BANK_REFUNDS_RECORDED_CHECK_NAME,
    async run() {
      const result = await pool().query(REFUNDED_TOPUPS_SQL, [scope.userIds]);
      const violations: string[] = [];
      for (const row of result.rows as { user_id: string; bank_charge_id: string; refunds: RefundRowSummary[] }[]) {
        let bankRefunds: BankRefund[];
        try {
          const res = await fetch(
            new URL(
              `refunds?chargeId=${encodeURIComponent(row.bank_charge_id)}`,
              `${bank.bankUrl.replace(/\/$/, "")}/`,
            ),
            {
              signal: AbortSignal.timeout(bank.timeoutMs),
            },
          );
          if (!res.ok) throw new Error(`HTTP ${res.status}`);
          bankRefunds = ((await res.json()) as { refunds: BankRefund[] }).refunds;
        } catch (error) {
          return checkResult(BANK_REFUNDS_RECORDED_CHECK_NAME, [`bank unreachable: ${(error as Error).message}`]);
        }
        const byKey = new Map(row.refunds.map((r) => [refundMerchantRefFor(row.user_id, r.refId), r]));
        for (const refund of bankRefunds) {
          const entry = byKey.get(refund.merchantRef);
          if (!entry) {
            violations.push(`bank refund ${refund.id} (${refund.merchantRef}) has no ledger entry`);
            continue;
          }
          byKey.delete(refund.merchantRef);
          if (entry.amount !== refund.amount)
            violations.push(`bank refund ${refund.id}: amount ${refund.amount}, ledger entry ${entry.amount}`);
          if (entry.status === "succeeded" && refund.status !== "succeeded")
            violations.push(`refund ${entry.refId} succeeded in the ledger, ${refund.status} at the bank`);
          if (entry.status === "failed" && refund.status !== "failed")
            violations.push(`refund ${entry.refId} gave its money back, but the bank's refund is ${refund.status}`);
          const finishedMs = Date.parse(refund.createdAt);
          if (
            (entry.status === "initiated" || entry.status === "processing") &&
            refund.status !== "pending" &&
            (options.nowMs ?? Date.now()) - finishedMs > options.stuckAfterS * 1000
          )
            violations.push(
              `refund ${entry.refId} (${refund.merchantRef}, bank refund ${refund.id}) is ${refund.status} at the bank since ${refund.createdAt} or later, still ${entry.status} in the ledger`,
            );
        }
        // Entries the bank never heard of: fine while in flight or refused at the claim; not once final.
        for (const [key, entry] of byKey)
          if (entry.status === "succeeded")
            violations.push(`refund ${key} succeeded in the ledger, unknown at the bank`);
      }
      return checkResult(BANK_REFUNDS_RECORDED_CHECK_NAME, violations);
    },
  };
}
