/**
 * The books' invariants (contract section 13; docs/decisions/058-double-entry-books.md), over the postings that
 * prisma/functions/ledger_journal.sql writes:
 * - `books_balanced`: each journal transaction (the postings of one entry's event) has the two legs its rule names,
 *   each of the entry's amount, summing to zero per currency; and all accounts together sum to zero;
 * - `journal_matches_entries`: each money-moving event of a final entry (and a refund's reservation) has exactly one
 *   transaction, and each transaction belongs to such an event of an entry;
 * - `wallet_accounts_match`: each wallet's balance minus its debt equals its account (the sum of its postings), and
 *   each posting's recorded balance after it equals the running sum.
 * The bank clearing account against the bank's own figures is lib/audit/checks/bank-clearing.ts.
 *
 * Sums are numeric in SQL, returned as text: a corrupted ledger may sum past 2^53.
 */
import { pool } from "../../db";
import { AUDIT_VIOLATIONS_MAX, type AuditCheck } from "../types";
import { checkResult, WHOLE_LEDGER, type AuditScope } from "./scope";

export const BOOKS_BALANCED_CHECK_NAME = "books_balanced";
export const JOURNAL_MATCHES_ENTRIES_CHECK_NAME = "journal_matches_entries";
export const WALLET_ACCOUNTS_CHECK_NAME = "wallet_accounts_match";

// $1 user ids or null, $2 limit. A transaction whose legs, accounts or amounts are not its rule's.
const UNBALANCED_SQL = `
WITH txn AS (
  SELECT p.user_id, p.entry_id, p.event, SUM(p.amount_minor::numeric) AS sum_minor, count(*)::int AS legs,
         count(DISTINCT p.currency)::int AS currencies, max(abs(p.amount_minor)) AS max_leg_minor,
         min(abs(p.amount_minor)) AS min_leg_minor, array_agg(p.account ORDER BY p.account) AS accounts
    FROM ledger_postings p
   WHERE ($1::text[] IS NULL OR p.user_id = ANY ($1::text[]))
   GROUP BY p.user_id, p.entry_id, p.event
)
SELECT t.user_id, t.entry_id::text, t.event, t.sum_minor::text, t.legs, t.accounts, e.type, e.ref_id,
       e.amount_minor::text AS entry_minor, count(*) OVER ()::int AS total
  FROM txn t
  LEFT JOIN ledger_entries e ON e.user_id = t.user_id AND e.id = t.entry_id
  LEFT JOIN ledger_journal_rules r ON r.type = e.type AND r.event = t.event
 WHERE t.sum_minor <> 0 OR t.legs <> 2 OR t.currencies <> 1 OR r.type IS NULL
    OR t.accounts <> ARRAY(SELECT a FROM unnest(ARRAY[r.from_account, r.to_account]) AS a ORDER BY a)
    OR t.max_leg_minor <> e.amount_minor OR t.min_leg_minor <> e.amount_minor
 ORDER BY t.user_id, t.entry_id, t.event
 LIMIT $2`;

const TOTALS_SQL = `
SELECT currency, SUM(amount_minor::numeric)::text AS sum_minor FROM ledger_postings
 WHERE ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
 GROUP BY currency HAVING SUM(amount_minor::numeric) <> 0`;

/** Each journal transaction balanced and as its rule says, and every account together at zero. */
export function createBooksBalancedCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: BOOKS_BALANCED_CHECK_NAME,
    async run() {
      const [unbalanced, totals] = await Promise.all([
        pool().query<{
          user_id: string;
          entry_id: string;
          event: string;
          sum_minor: string;
          legs: number;
          accounts: string[];
          type: string | null;
          ref_id: string | null;
          entry_minor: string | null;
          total: number;
        }>(UNBALANCED_SQL, [scope.userIds, AUDIT_VIOLATIONS_MAX]),
        pool().query<{ currency: string; sum_minor: string }>(TOTALS_SQL, [scope.userIds]),
      ]);
      const violations = unbalanced.rows.map((row) =>
        row.type === null
          ? `postings of entry ${row.entry_id} (user ${row.user_id}, ${row.event}) belong to no entry`
          : `${row.type} ${row.ref_id} of user ${row.user_id}, ${row.event}: ${row.legs} postings to ${row.accounts.join(", ")} summing to ${row.sum_minor}, for an entry of ${row.entry_minor}`,
      );
      for (const row of totals.rows)
        violations.push(`all accounts together sum to ${row.sum_minor} ${row.currency}, not 0`);
      return checkResult(BOOKS_BALANCED_CHECK_NAME, violations, (unbalanced.rows[0]?.total ?? 0) + totals.rows.length);
    },
  };
}

// $1 user ids or null, $2 limit. The events an entry's state says moved money (the backfill of migration
// 20261211100000_double_entry_books writes the same list), against the transactions there are.
const UNMATCHED_SQL = `
WITH expected AS (
  SELECT e.user_id, e.id AS entry_id, w.event, e.type, e.ref_id, e.status
    FROM ledger_entries e
   CROSS JOIN (VALUES ('move'), ('reserve'), ('settle'), ('release')) AS w(event)
   WHERE ($1::text[] IS NULL OR e.user_id = ANY ($1::text[]))
     AND CASE w.event
           WHEN 'move' THEN e.type NOT IN ('refund', 'payout') AND e.status = 'succeeded'
           WHEN 'reserve' THEN e.type IN ('refund', 'payout')
                               AND (e.status <> 'failed' OR e.failure_reason = 'declined_by_bank')
           WHEN 'settle' THEN e.type IN ('refund', 'payout') AND e.status = 'succeeded'
           ELSE e.type IN ('refund', 'payout') AND e.status = 'failed' AND e.failure_reason = 'declined_by_bank' END
), actual AS (
  SELECT DISTINCT p.user_id, p.entry_id, p.event FROM ledger_postings p
   WHERE ($1::text[] IS NULL OR p.user_id = ANY ($1::text[]))
)
SELECT COALESCE(x.user_id, a.user_id) AS user_id, COALESCE(x.entry_id, a.entry_id)::text AS entry_id,
       COALESCE(x.event, a.event) AS event, x.type, x.ref_id, x.status, x.user_id IS NULL AS unexpected,
       count(*) OVER ()::int AS total
  FROM expected x
  FULL OUTER JOIN actual a ON a.user_id = x.user_id AND a.entry_id = x.entry_id AND a.event = x.event
 WHERE x.user_id IS NULL OR a.user_id IS NULL
 ORDER BY 1, 2, 3
 LIMIT $2`;

/** One transaction per money-moving event of an entry, and none for anything else. */
export function createJournalMatchesEntriesCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: JOURNAL_MATCHES_ENTRIES_CHECK_NAME,
    async run() {
      const result = await pool().query<{
        user_id: string;
        entry_id: string;
        event: string;
        type: string | null;
        ref_id: string | null;
        status: string | null;
        unexpected: boolean;
        total: number;
      }>(UNMATCHED_SQL, [scope.userIds, AUDIT_VIOLATIONS_MAX]);
      const violations = result.rows.map((row) =>
        row.unexpected
          ? `entry ${row.entry_id} of user ${row.user_id} has a ${row.event} transaction its state does not call for`
          : `${row.type} ${row.ref_id} of user ${row.user_id} is ${row.status} but has no ${row.event} transaction`,
      );
      return checkResult(JOURNAL_MATCHES_ENTRIES_CHECK_NAME, violations, result.rows[0]?.total ?? 0);
    },
  };
}

// $1 user ids or null, $2 limit. The chain is in id order: each wallet's postings are written under its lock.
const WALLET_ACCOUNTS_SQL = `
WITH chain AS (
  SELECT p.user_id, p.id, p.balance_after_minor::numeric AS after_minor,
         SUM(p.amount_minor::numeric) OVER (PARTITION BY p.user_id ORDER BY p.id) AS running_minor,
         row_number() OVER (PARTITION BY p.user_id ORDER BY p.id DESC) AS from_newest
    FROM ledger_postings p
   WHERE p.account = 'wallet' AND ($1::text[] IS NULL OR p.user_id = ANY ($1::text[]))
), account AS (
  SELECT user_id, max(running_minor) FILTER (WHERE from_newest = 1) AS sum_minor,
         count(*) FILTER (WHERE after_minor <> running_minor)::int AS broken,
         min(id) FILTER (WHERE after_minor <> running_minor) AS first_broken_id
    FROM chain GROUP BY user_id
), wallet AS (
  SELECT user_id, balance_minor::numeric - debt_minor::numeric AS wallet_minor FROM wallets
   WHERE ($1::text[] IS NULL OR user_id = ANY ($1::text[]))
)
SELECT COALESCE(w.user_id, a.user_id) AS user_id, COALESCE(w.wallet_minor, 0)::text AS wallet_minor,
       COALESCE(a.sum_minor, 0)::text AS account_minor, COALESCE(a.broken, 0) AS broken,
       a.first_broken_id::text, count(*) OVER ()::int AS total
  FROM wallet w
  FULL OUTER JOIN account a ON a.user_id = w.user_id
 WHERE COALESCE(w.wallet_minor, 0) <> COALESCE(a.sum_minor, 0) OR COALESCE(a.broken, 0) > 0
 ORDER BY 1
 LIMIT $2`;

/** Each wallet equals its account, and each posting's balance after it is the running sum. */
export function createWalletAccountsCheck(scope: AuditScope = WHOLE_LEDGER): AuditCheck {
  return {
    name: WALLET_ACCOUNTS_CHECK_NAME,
    async run() {
      const result = await pool().query<{
        user_id: string;
        wallet_minor: string;
        account_minor: string;
        broken: number;
        first_broken_id: string | null;
        total: number;
      }>(WALLET_ACCOUNTS_SQL, [scope.userIds, AUDIT_VIOLATIONS_MAX]);
      const violations = result.rows.flatMap((row) => [
        ...(row.wallet_minor !== row.account_minor
          ? [
              `user ${row.user_id}: wallet balance minus debt ${row.wallet_minor}, but the postings to its account sum to ${row.account_minor}`,
            ]
          : []),
        ...(row.broken > 0
          ? [
              `user ${row.user_id}: ${row.broken} postings record a balance after them other than the running sum (first: posting ${row.first_broken_id})`,
            ]
          : []),
      ]);
      return checkResult(WALLET_ACCOUNTS_CHECK_NAME, violations, result.rows[0]?.total ?? 0);
    },
  };
}
