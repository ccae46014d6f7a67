/**
 * Transfers balanced (contract sections 7 and 15; docs/decisions/061): every succeeded `transfer` has exactly one
 * `transfer_in` (keyed `transfer:<its entry id>`, of another user) of the same amount and currency, succeeded, and
 * every `transfer_in` has its succeeded `transfer`; a failed transfer has none. With the books' own checks
 * (books_balanced: each transaction sums to zero), this says the `transfers_in_transit` account nets to zero per
 * transfer: no money made or lost between two wallets. Over `scope`: transfers sent by, or received by, its users.
 *
 * Reversals (contract section 15; docs/decisions/063) too: every `transfer_reversal` (the sender's credit) names the
 * sender's succeeded `transfer` of the same amount and currency and has exactly one `transfer_reversal_out` (keyed
 * `transfer_reversal:<its entry id>`) of the same amount and currency, debited from the user who received that
 * transfer (the owner of its `transfer_in`), both succeeded; no `transfer_reversal_out` without its reversal; and at
 * most one reversal per transfer.
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
   -- A transfer received in scope whose sender is outside it is paired by the branch below, not left unpaired here.
   WHERE s.id IS NOT NULL OR $1::text[] IS NULL
      OR NOT EXISTS (SELECT 1 FROM ledger_entries x WHERE x.type = 'transfer' AND 'transfer:' || x.id = r.ref_id)
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

// $1 user ids or null, $2 limit. Each reversal with its recipient's debit, the transfer it names and that transfer's
// `transfer_in` (read by the id the debit records, then held to the transfer's key). Reversals are rare: both sides
// are read by type, and the scope applies to who sent or received.
const UNPAIRED_REVERSALS_SQL = `
WITH pairs AS (
  SELECT r.user_id AS sender, r.ref_id AS transfer_ref, r.id AS reversal_id, r.status AS reversal_status,
         r.amount_minor AS reversal_minor, r.currency AS reversal_currency, o.user_id AS recipient, o.id AS out_id,
         o.status AS out_status, o.amount_minor AS out_minor, o.currency AS out_currency,
         o.params->>'transferInEntryId' AS in_id, o.ref_id AS out_ref
    FROM (SELECT * FROM ledger_entries WHERE type = 'transfer_reversal') r
    FULL OUTER JOIN (SELECT * FROM ledger_entries WHERE type = 'transfer_reversal_out') o
      ON o.ref_id = 'transfer_reversal:' || r.id
), judged AS (
  SELECT p.*, t.status AS transfer_status, count(*) OVER (PARTITION BY p.in_id) AS reversals_of_received,
         (t.id IS NOT NULL AND t.amount_minor = p.reversal_minor AND t.currency = p.reversal_currency) AS names_transfer,
         (i.id IS NOT NULL AND i.user_id = p.recipient AND i.ref_id = 'transfer:' || t.id) AS from_recipient
    FROM pairs p
    LEFT JOIN ledger_entries t ON t.user_id = p.sender AND t.type = 'transfer' AND t.ref_id = p.transfer_ref
    LEFT JOIN ledger_entries i ON i.type = 'transfer_in' AND i.id::text = p.in_id
)
SELECT sender, transfer_ref, recipient, out_ref, reversal_status, out_status, transfer_status,
       reversal_minor::text AS reversal_minor, out_minor::text AS out_minor, names_transfer, from_recipient,
       reversals_of_received::int AS reversals_of_received, count(*) OVER ()::int AS total
  FROM judged
 WHERE ($1::text[] IS NULL OR sender = ANY ($1::text[]) OR recipient = ANY ($1::text[]))
   AND (reversal_id IS NULL OR out_id IS NULL OR reversal_status <> 'succeeded' OR out_status <> 'succeeded'
        OR transfer_status IS DISTINCT FROM 'succeeded' OR NOT names_transfer OR NOT from_recipient
        OR out_minor <> reversal_minor OR out_currency <> reversal_currency OR sender = recipient
        OR reversals_of_received > 1)
 ORDER BY 1, 2
 LIMIT $2`;

interface UnpairedReversal {
  sender: string | null;
  transfer_ref: string | null;
  recipient: string | null;
  out_ref: string | null;
  reversal_status: string | null;
  out_status: string | null;
  transfer_status: string | null;
  reversal_minor: string | null;
  out_minor: string | null;
  names_transfer: boolean | null;
  from_recipient: boolean | null;
  reversals_of_received: number;
  total: number;
}

/** One reversal that does not pair, in words. */
function reversalViolation(row: UnpairedReversal): string {
  if (row.sender === null) return `${row.out_ref} of user ${row.recipient} was debited, but no reversal made it`;
  const reversal = `reversal of transfer ${row.transfer_ref} of user ${row.sender}`;
  if (row.recipient === null) return `${reversal} is ${row.reversal_status}, but nobody was debited`;
  if (row.reversals_of_received > 1)
    return `${reversal}: the transfer user ${row.recipient} received was reversed more than once`;
  if (!row.names_transfer)
    return `${reversal} (${row.reversal_minor}) does not match a transfer (${row.transfer_status ?? "none"})`;
  if (!row.from_recipient) return `${reversal} debited user ${row.recipient}, who did not receive that transfer`;
  return `${reversal} (${row.reversal_status}, ${row.reversal_minor}) debited user ${row.recipient} as ${row.out_status}, ${row.out_minor}`;
}

/** Every reversal pairs a sender's credit with the recipient's debit of the same amount, once per transfer. */
async function unpairedReversals(scope: AuditScope): Promise<{ violations: string[]; total: number }> {
  const result = await pool().query<UnpairedReversal>(UNPAIRED_REVERSALS_SQL, [scope.userIds, AUDIT_VIOLATIONS_MAX]);
  return { violations: result.rows.map(reversalViolation), total: result.rows[0]?.total ?? 0 };
}

/**
 * Every succeeded transfer received once, of the same amount, and nothing received that was not sent; every reversal
 * paired with its recipient's debit, at most once per transfer.
 */
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
      const reversals = await unpairedReversals(scope);
      return checkResult(
        TRANSFERS_CHECK_NAME,
        [...violations, ...reversals.violations],
        (result.rows[0]?.total ?? 0) + reversals.total,
      );
    },
  };
}
