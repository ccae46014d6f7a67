/**
 * Contract section 7.1: for every user, `wallet.balance − wallet.debt = Σ succeeded credits − Σ succeeded debits` in
 * the ledger (the debt is what chargebacks took beyond the balance: contract section 12), where a refund's debit
 * counts from its claim (the claim reserves the money; contract section 11): refunds in flight (`initiated` or
 * `processing`) count as debits, and a failed refund (refused at the claim, or given back) counts as nothing.
 * A wallet with a debt holds no balance (section 12: every credit repays the debt first, and a chargeback opens one
 * only for what the balance could not cover), which `balance − debt` alone cannot see: 100 held and 100 owed sum
 * to the same 0 as nothing at all.
 */
import { pool } from "../../db";
import { LEDGER_DIRECTION, LEDGER_TYPES } from "../../ledger";
import { AUDIT_VIOLATIONS_MAX, type AuditCheck } from "../types";
import { checkResult, WHOLE_LEDGER, type AuditScope } from "./scope";

export const BALANCE_CHECK_NAME = "balance_matches_ledger";

const CREDIT_TYPES = LEDGER_TYPES.filter((type) => LEDGER_DIRECTION[type] === 1);
const DEBIT_TYPES = LEDGER_TYPES.filter((type) => LEDGER_DIRECTION[type] === -1);

// Sums are compared as numeric in SQL and returned as text: a corrupted ledger may sum past 2^53, which the
// app's int8 parser would refuse, and the audit must still be able to say so. Payouts in flight are debits already
// too: their claim held the money (contract section 14).
// A user with ledger rows but no wallet, or a wallet but no rows, is compared against 0. Refunds in flight are
// debits already (their claim reserved the money). A wallet holding a balance beside a debt is reported too.
// $1 user ids or null, $2 credit types, $3 debit types, $4 limit.
const BALANCE_SQL = `
WITH ledger AS (
  SELECT user_id,
         SUM(CASE WHEN type = ANY ($2::text[]) THEN amount_minor::numeric ELSE -amount_minor::numeric END) AS ledger_minor
    FROM ledger_entries
   WHERE (status = 'succeeded' OR (type IN ('refund', 'payout') AND status IN ('initiated', 'processing')))
     AND type = ANY ($2::text[] || $3::text[])
     AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
   GROUP BY user_id
), wallet AS (
  SELECT user_id, balance_minor::numeric - debt_minor::numeric AS balance_minor,
         (balance_minor > 0 AND debt_minor > 0) AS held_beside_debt, balance_minor::text AS held_minor,
         debt_minor::text AS debt_minor
    FROM wallets
   WHERE ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
)
SELECT COALESCE(w.user_id, l.user_id) AS user_id,
       COALESCE(w.balance_minor, 0)::text AS balance_minor,
       COALESCE(l.ledger_minor, 0)::text AS ledger_minor,
       COALESCE(w.balance_minor, 0) <> COALESCE(l.ledger_minor, 0) AS sum_differs,
       COALESCE(w.held_beside_debt, false) AS held_beside_debt, w.held_minor, w.debt_minor,
       count(*) OVER ()::int AS total
  FROM wallet w
  FULL OUTER JOIN ledger l ON l.user_id = w.user_id
 WHERE COALESCE(w.balance_minor, 0) <> COALESCE(l.ledger_minor, 0) OR w.held_beside_debt
 ORDER BY 1
 LIMIT $4`;

/**
 * The balance check (7.1) over `scope`. Violations name the user and, in minor units, the wallet's balance minus
 * debt against the ledger's sum, or the balance held beside a debt. Throws when the database cannot be queried.
 */
export function createBalanceCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: BALANCE_CHECK_NAME,
    async run() {
      const result = await pool().query<{
        user_id: string;
        balance_minor: string;
        ledger_minor: string;
        sum_differs: boolean;
        held_beside_debt: boolean;
        held_minor: string | null;
        debt_minor: string | null;
        total: number;
      }>(BALANCE_SQL, [scope.userIds, CREDIT_TYPES, DEBIT_TYPES, AUDIT_VIOLATIONS_MAX]);
      const violations = result.rows.flatMap((row) => [
        ...(row.sum_differs
          ? [
              `user ${row.user_id}: wallet balance minus debt ${row.balance_minor} but succeeded credits minus debits are ${row.ledger_minor}`,
            ]
          : []),
        ...(row.held_beside_debt
          ? [
              `user ${row.user_id}: wallet holds ${row.held_minor} beside a debt of ${row.debt_minor} (a credit repays the debt first)`,
            ]
          : []),
      ]);
      return checkResult(BALANCE_CHECK_NAME, violations, result.rows[0]?.total ?? 0);
    },
  };
}
