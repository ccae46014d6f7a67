/**
 * What the charge checks (7.2, 7.6) compare with the bank: every top-up in scope and what credits it, the top-up
 * itself or its `adjustment` entry (at most one per top-up: ledger_entries_user_id_adjusts_entry_id_key), with why it
 * may be stuck (lease, failed settlements, flag).
 */
import type { BankCharge } from "../../bank/client";
import { pool } from "../../db";
import type { AuditScope } from "./scope";

// $1 user ids or null. `in_flight`: unfinished under a live lease (a request or the reconciler is on it right now).
const TOPUP_CREDITS_SQL = `
SELECT t.user_id, t.ref_id, t.status, t.amount_minor, t.currency, t.bank_charge_id, t.lease_expires_at,
       t.settle_failures, t.settle_last_error, t.settle_flagged_at,
       (t.status IN ('initiated', 'processing') AND t.lease_expires_at >= now()) AS in_flight,
       a.status AS adjustment_status, a.amount_minor AS adjustment_minor, a.params->>'chargeId' AS adjustment_charge_id
  FROM ledger_entries t
  LEFT JOIN ledger_entries a ON a.user_id = t.user_id AND a.adjusts_entry_id = t.id
 WHERE t.type = 'topup'
   AND ($1::text[] IS NULL OR t.user_id = ANY ($1::text[]))`;

/** One top-up row and its adjustment's fields (null without one); amounts in minor units. */
export interface TopupCreditRow {
  user_id: string;
  ref_id: string;
  status: "initiated" | "processing" | "succeeded" | "failed";
  amount_minor: number;
  currency: string;
  bank_charge_id: string | null;
  lease_expires_at: Date | null;
  settle_failures: number;
  settle_last_error: string | null;
  settle_flagged_at: Date | null;
  in_flight: boolean;
  adjustment_status: string | null;
  adjustment_minor: number | null;
  adjustment_charge_id: string | null;
}

/** Every top-up of `scope` with its adjustment (one query). Throws database errors. */
export async function readTopupCredits(scope: AuditScope): Promise<TopupCreditRow[]> {
  return (await pool().query<TopupCreditRow>(TOPUP_CREDITS_SQL, [scope.userIds])).rows;
}

/** True when the row's adjustment entry credited exactly `charge` (its id and amount). */
export function adjustmentCredits(row: TopupCreditRow, charge: BankCharge): boolean {
  return (
    row.adjustment_status === "succeeded" &&
    row.adjustment_minor === charge.amount &&
    row.adjustment_charge_id === charge.id
  );
}
