import { pool } from "../db";
import { entryColumns, toLedgerEntry } from "../ledger";
import { type AdminPayoutView, adminPayoutView } from "./list-admin-payouts";
import { STUCK_AGE_MS } from "./stuck";

/**
 * Why a payout is listed for a person: `flagged` (its settlement kept failing: SETTLE_ATTEMPTS_MAX), `stuck` (unfinished
 * for longer than {@link STUCK_AGE_MS}: the bank has not said yet, its money is held), `returned` (paid, then sent back
 * by the receiving bank and credited to the wallet, in the last {@link RETURNS_LISTED_DAYS} days).
 */
export type PayoutAttentionReason = "flagged" | "stuck" | "returned";

export type PayoutNeedingAttention = AdminPayoutView & {
  readonly why: PayoutAttentionReason;
  /** Failed attempts to settle it from the bank's word, and the last one described. */
  readonly settleFailures: number;
  readonly settleLastError: string | null;
  /** A returned payout's return, as its entry's transition says it (the bank's reason and return id); else null. */
  readonly returnDetail: string | null;
};

/** A return is a finished fact: listed for a week, then only on the payout's own timeline. */
export const RETURNS_LISTED_DAYS = 7;

// Three branches, each at most $3 rows: the unfinished payouts flagged or older than $1 ms (the partial index of
// unfinished rows, ledger_entries_unfinished_idx, holds few rows), and the payouts whose return landed in the last $2
// days (ledger_entries_type_created_at_idx on the returns, each payout read by its unique key). Flagged first (most
// recently flagged first), then stuck, then returned, each newest first (as the admin page's other lists: the oldest
// problems first would hide new ones).
const NEEDING_ATTENTION_SQL = `
SELECT * FROM (
  (SELECT ${entryColumns("e")}, u.email AS user_email, NULL::timestamptz AS returned_at, NULL::text AS return_detail,
          CASE WHEN e.settle_flagged_at IS NOT NULL THEN 0 ELSE 1 END AS rank
     FROM ledger_entries e JOIN "user" u ON u.id = e.user_id
    WHERE e.type = 'payout' AND e.status IN ('initiated', 'processing')
      AND (e.settle_flagged_at IS NOT NULL OR e.created_at < now() - $1::int * interval '1 millisecond')
    ORDER BY e.settle_flagged_at DESC NULLS LAST, e.created_at DESC
    LIMIT $3)
  UNION ALL
  (SELECT ${entryColumns("e")}, u.email AS user_email, r.created_at AS returned_at,
          (SELECT t.detail FROM ledger_transitions t WHERE t.user_id = r.user_id AND t.entry_id = r.id
            ORDER BY t.id DESC LIMIT 1) AS return_detail,
          2 AS rank
     FROM ledger_entries r
     JOIN ledger_entries e ON e.user_id = r.user_id AND e.type = 'payout' AND e.ref_id = r.ref_id
     JOIN "user" u ON u.id = e.user_id
    WHERE r.type = 'payout_return' AND r.created_at > now() - $2::int * interval '1 day'
    ORDER BY r.created_at DESC
    LIMIT $3)
) listed
ORDER BY rank, settle_flagged_at DESC NULLS LAST, CASE WHEN rank = 1 THEN created_at END DESC, returned_at DESC`;

const REASONS: readonly PayoutAttentionReason[] = ["flagged", "stuck", "returned"];

/**
 * The payouts a person should look at (contract section 14; docs/decisions/060): flagged ones, those whose outcome
 * has been unknown for longer than {@link STUCK_AGE_MS} (never failed or released on a timer: only the bank's word
 * ends them), and those returned in the last {@link RETURNS_LISTED_DAYS} days, in that order; at most `limit`
 * (1..100) of each kind. Throws database errors.
 */
export async function listPayoutsNeedingAttention(limit: number): Promise<PayoutNeedingAttention[]> {
  const bounded = Math.min(Math.max(Math.trunc(limit), 1), 100);
  const result = await pool().query(NEEDING_ATTENTION_SQL, [STUCK_AGE_MS, RETURNS_LISTED_DAYS, bounded]);
  return result.rows.map((row) => {
    const entry = toLedgerEntry(row);
    return {
      ...adminPayoutView(entry, row.user_email as string, (row.returned_at as Date | null) ?? null),
      why: REASONS[row.rank as number] ?? "stuck",
      settleFailures: entry.settleFailures,
      settleLastError: entry.settleLastError,
      returnDetail: (row.return_detail as string | null) ?? null,
    };
  });
}
