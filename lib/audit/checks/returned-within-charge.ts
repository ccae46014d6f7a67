/**
 * What goes back to the card never exceeds what was charged (contract sections 11 and 12; case C26): for every
 * credited charge (a succeeded top-up, or the adjustment that credited a charge after its top-up failed), its refunds
 * that did not fail plus its chargebacks not reversed add up to at most the charge's amount. The bank refuses a refund
 * while a dispute is open or lost and opens a dispute only for what was not refunded, and the wallet refuses the same
 * refund at its claim (lib/ledger/refunds.ts), so a violation means money went back to the card twice.
 */
import { pool } from "../../db";
import type { AuditCheck } from "../types";
import { checkResult, WHOLE_LEDGER, type AuditScope } from "./scope";

export const RETURNED_WITHIN_CHARGE_CHECK_NAME = "returned_within_charge";

// Per credited charge with any chargeback: the charge's credited entry (a top-up by its bank_charge_id, an adjustment
// by its ref_id, which is the charge id), its refunds reserved or final (refunded_minor: refunds not failed, which the
// refunds_within_topups check holds to the refund rows), and its chargebacks net of reversals, keyed by the charge id
// the dispute named (params.chargeId). Sums as numeric, returned as text (a corrupted ledger may pass 2^53).
// $1 user ids or null, $2 limit.
const RETURNED_WITHIN_CHARGE_SQL = `
WITH charged_back AS (
  SELECT e.user_id, e.params->>'chargeId' AS charge_id,
         SUM(CASE e.type WHEN 'chargeback' THEN e.amount_minor::numeric ELSE -e.amount_minor::numeric END) AS net_minor
    FROM ledger_entries e
   WHERE e.type IN ('chargeback', 'chargeback_reversal') AND e.status = 'succeeded'
     AND ($1::text[] IS NULL OR e.user_id = ANY ($1::text[]))
   GROUP BY 1, 2
)
SELECT c.user_id, c.charge_id, t.type, t.ref_id, t.amount_minor::text AS amount_minor,
       t.refunded_minor::text AS refunded_minor, c.net_minor::text AS charged_back_minor,
       count(*) OVER ()::int AS total
  FROM charged_back c
  JOIN ledger_entries t
    ON t.user_id = c.user_id AND t.status = 'succeeded'
   AND ((t.type = 'topup' AND t.bank_charge_id = c.charge_id) OR (t.type = 'adjustment' AND t.ref_id = c.charge_id))
 WHERE t.refunded_minor + c.net_minor > t.amount_minor
 ORDER BY 1, 2
 LIMIT $2`;

/** The check over `scope`: one query, bounded. Throws only when the database cannot be queried. */
export function createReturnedWithinChargeCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: RETURNED_WITHIN_CHARGE_CHECK_NAME,
    async run() {
      const result = await pool().query(RETURNED_WITHIN_CHARGE_SQL, [scope.userIds, 100]);
      const violations = result.rows.map(
        (row) =>
          `${row.type} ${row.ref_id} of user ${row.user_id} (charge ${row.charge_id}): ${row.refunded_minor} refunded + ${row.charged_back_minor} charged back > ${row.amount_minor} charged`,
      );
      return checkResult(RETURNED_WITHIN_CHARGE_CHECK_NAME, violations, result.rows[0]?.total ?? violations.length);
    },
  };
}
