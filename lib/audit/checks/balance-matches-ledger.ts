/**
 * Contract section 7.1: for every user, `wallet.balance − wallet.debt = Σ succeeded credits − Σ succeeded debits` in
 * the ledger (the debt is what chargebacks took beyond the balance: contract section 12), where a refund's debit
 * counts from its claim (the claim reserves the money; contract section 11): refunds in flight (`initiated` or
 * `processing`) count as debits, and a failed refund (refused at the claim, or given back) counts as nothing.
 */
import { pool } from "../../db";
import { LEDGER_DIRECTION, LEDGER_TYPES } from "../../ledger";
import { AUDIT_VIOLATIONS_MAX, type AuditCheck } from "../types";
import { checkResult, WHOLE_LEDGER, type AuditScope } from "./scope";

export const BALANCE_CHECK_NAME = "balance_matches_ledger";

const CREDIT_TYPES = LEDGER_TYPES.filter((type) => LEDGER_DIRECTION[type] === 1);
const DEBIT_TYPES = LEDGER_TYPES.filter((type) => LEDGER_DIRECTION[type] === -1);

// Sums are compared as numeric in SQL and returned as text: a corrupted ledger may sum past 2^53, which the
// app's int8 parser would refuse, and the audit must still be able to say so.
// A user with ledger rows but no wallet, or a wallet but no rows, is compared against 0. Refunds in flight are
// debits already (their claim reserved the money).
// $1 user ids or null, $2 credit types, $3 debit types, $4 limit.
const BALANCE_SQL = `
WITH ledger AS (
  SELECT user_id,
         SUM(CASE WHEN type = ANY ($2::text[]) THEN amount_minor::numeric ELSE -amount_minor::numeric END) AS ledger_minor
    FROM ledger_entries
   WHERE (status = 'succeeded' OR (type = 'refund' AND status IN ('initiated', 'processing')))
     AND type = ANY ($2::text[] || $3::text[])
     AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
   GROUP BY user_id
), wallet AS (
  SELECT user_id, balance_minor::numeric - debt_minor::numeric AS balance_minor
    FROM wallets
   WHERE ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
)
SELECT COALESCE(w.user_id, l.user_id) AS user_id,
       COALESCE(w.balance_minor, 0)::text AS balance_minor,
       COALESCE(l.ledger_minor, 0)::text AS ledger_minor,
       count(*) OVER ()::int AS total
  FROM wallet w
  FULL OUTER JOIN ledger l ON l.user_id = w.user_id
 WHERE COALESCE(w.balance_minor, 0) <> COALESCE(l.ledger_minor, 0)
 ORDER BY 1
 LIMIT $4`;

/**
 * The balance check (7.1) over `scope`. Violations name the user, the wallet balance and the ledger's sum, in
 * minor units. Throws when the database cannot be queried.
 */
export function createBalanceCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: BALANCE_CHECK_NAME,
    async run() {
      const result = await pool().query<{
        user_id: string;
        balance_minor: string;
        ledger_minor: string;
        total: number;
      }>(BALANCE_SQL, [scope.userIds, CREDIT_TYPES, DEBIT_TYPES, AUDIT_VIOLATIONS_MAX]);
      const violations = result.rows.map(
        (row) =>
          `user ${row.user_id}: wallet balance minus debt ${row.balance_minor} but succeeded credits minus debits are ${row.ledger_minor}`,
      );
      return checkResult(BALANCE_CHECK_NAME, violations, result.rows[0]?.total ?? 0);
    },
  };
}
