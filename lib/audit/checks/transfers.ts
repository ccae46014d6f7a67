/**
 * Transfers balanced (contract sections 7 and 15; docs/decisions/061): every succeeded `transfer` has exactly one
 * `transfer_in` (keyed `transfer:<its entry id>`, of another user) of the same amount and currency, succeeded, and
 * every `transfer_in` has its succeeded `transfer`; a failed transfer has none. With the books' own checks
 * (books_balanced: each transaction sums to zero), this says the `transfers_in_transit` account nets to zero per
 * transfer: no money made or lost between two wallets. Over `scope`: transfers sent by, or received by, its users.
 */
import { pool } from "../../db";
import { AUDIT_VIOLATIONS_MAX, type AuditCheck } from "../types";
import { checkResult, WHOLE_LEDGER, type AuditScope } from "./scope";

export const TRANSFERS_CHECK_NAME = "transfers_balanced";

// $1 user ids or null, $2 limit. Senders' entries against recipients' entries, matched on the recipient's key.
const UNPAIRED_SQL = `
WITH sent AS (
  SELECT user_id, id, ref_id, amount_minor, currency, status FROM ledger_entries
   WHERE type = 'transfer' AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
), received AS (
  SELECT user_id, ref_id, amount_minor, currency, status FROM ledger_entries
   WHERE type = 'transfer_in' AND ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
), paired AS (
  SELECT s.user_id AS sender, s.ref_id AS sender_ref, s.status AS sent_status, s.amount_minor AS sent_minor,
         s.currency AS sent_currency, r.user_id AS recipient, r.ref_id AS received_ref, r.status AS received_status,
         r.amount_minor AS received_minor, r.currency AS received_currency
    FROM sent s
    FULL OUTER JOIN received r ON r.ref_id = 'transfer:' || s.id
  UNION ALL
  -- A recipient in scope whose sender is outside it: the sender's entry is read by its id.
  SELECT s.user_id, s.ref_id, s.status, s.amount_minor, s.currency, r.user_id, r.ref_id, r.status, r.amount_minor,
         r.currency
    FROM received r
    JOIN ledger_entries s ON s.type = 'transfer' AND 'transfer:' || s.id = r.ref_id
   WHERE $1::text[] IS NOT NULL AND NOT s.user_id = ANY ($1::text[])
)
SELECT sender, sender_ref, sent_status, recipient, received_ref, received_status,
       sent_minor::text AS sent_minor, received_minor::text AS received_minor, count(*) OVER ()::int AS total
  FROM paired
 WHERE ($1::text[] IS NULL OR sender IS NULL OR recipient IS NULL OR sender = ANY ($1::text[])
        OR recipient = ANY ($1::text[]))
   AND NOT (sent_status = 'failed' AND recipient IS NULL)
   AND (sender IS NULL OR recipient IS NULL OR sent_status <> 'succeeded' OR received_status <> 'succeeded'
        OR sent_minor <> received_minor OR sent_currency <> received_currency OR sender = recipient)
 ORDER BY 1, 2
 LIMIT $2`;

/** Every succeeded transfer received once, of the same amount, and nothing received that was not sent. */
export function createTransfersCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: TRANSFERS_CHECK_NAME,
    async run() {
      const result = await pool().query<{
        sender: string | null;
        sender_ref: string | null;
        sent_status: string | null;
        recipient: string | null;
        received_ref: string | null;
        received_status: string | null;
        sent_minor: string | null;
        received_minor: string | null;
        total: number;
      }>(UNPAIRED_SQL, [scope.userIds, AUDIT_VIOLATIONS_MAX]);
      const violations = result.rows.map((row) =>
        row.sender === null
          ? `${row.received_ref} of user ${row.recipient} was received, but no transfer sent it`
          : row.recipient === null
            ? `transfer ${row.sender_ref} of user ${row.sender} is ${row.sent_status}, but nobody received it`
            : `transfer ${row.sender_ref} of user ${row.sender} (${row.sent_status}, ${row.sent_minor}) was received by user ${row.recipient} as ${row.received_status}, ${row.received_minor}`,
      );
      return checkResult(TRANSFERS_CHECK_NAME, violations, result.rows[0]?.total ?? 0);
    },
  };
}
