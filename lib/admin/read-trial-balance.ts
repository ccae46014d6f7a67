/**
 * The trial balance of the books (contract section 13.5; docs/decisions/058-double-entry-books.md), for the admin
 * Books page and `GET /api/v1/admin/books`: every house account's balance, the users' wallet accounts as two lines,
 * the total of all accounts, and each account's change per UTC day.
 *
 * Signs: a posting's `amount_minor` is what its account gains, credit-positive (a wallet's credit is +). The "sum" of
 * an account is the sum of its postings; its balance "as shown" is that sum for a credit-normal account and minus it
 * for a debit-normal one (an asset). All accounts' sums together are zero when the books balance.
 */
import { z } from "zod";
import type { AuditScope } from "../audit/checks/scope";
import { WHOLE_LEDGER } from "../audit/checks/scope";
import type { PoolClient } from "pg";
import { withReadSnapshot } from "../db";
import { env } from "../env";

/**
 * Most accounts read: the chart has five (four house accounts and `wallet`); 50 bounds the read should the chart grow
 * without this page being revisited.
 */
const ACCOUNTS_MAX = 50;
/** UTC days of the daily change, today included: two weeks, what an operator compares a day against. */
export const BOOKS_DAYS = 14;
const DAY_MS = 86_400_000;

const normalSideSchema = z.enum(["debit", "credit"]);

/**
 * Minor units as a decimal string: a sum over every wallet and house leg of the ledger can pass 2^53 (many wallets
 * near the balance ceiling), where a JSON number would round in most clients.
 */
const minorTextSchema = z.string().regex(/^-?[0-9]{1,30}$/);

export const trialBalanceLineSchema = z
  .strictObject({
    account: z.string().meta({ description: "The account's name (`wallet` for the two wallet lines)." }),
    line: z.enum(["house", "owed_to_users", "owed_by_users"]).meta({
      description:
        "`house`: one house account; `owed_to_users`: the wallet accounts above zero together; `owed_by_users`: " +
        "the wallet accounts below zero (debts) together.",
    }),
    normalSide: normalSideSchema,
    description: z.string(),
    sumMinor: minorTextSchema.meta({
      description: "The sum of the line's postings, credit-positive, in minor units (a decimal string).",
    }),
    balanceMinor: minorTextSchema.meta({
      description:
        "The balance as the account's normal side shows it: the sum, or minus it for a debit-normal account.",
    }),
    users: z.int().min(0).nullable().meta({ description: "Wallet lines: how many users' accounts are in the line." }),
  })
  .meta({ id: "TrialBalanceLine" });

export const booksDaySchema = z
  .strictObject({
    day: z.iso.date().meta({ description: "A UTC day." }),
    changes: z.record(z.string(), minorTextSchema).meta({
      description:
        "Each house account's change of its balance as shown on the day, in minor units (decimal strings), and " +
        "`wallets`: the change of " +
        "all wallet accounts together, minus the house accounts' change (every transaction sums to zero).",
    }),
  })
  .meta({ id: "BooksDay" });

export const trialBalanceSchema = z
  .strictObject({
    currency: z.string(),
    lines: z.array(trialBalanceLineSchema),
    totalMinor: minorTextSchema.meta({
      description: 'The sum of every line\'s `sumMinor`: "0" when the books balance.',
    }),
    balanced: z.boolean().meta({ description: '`totalMinor` is "0".' }),
    days: z.array(booksDaySchema).meta({ description: `The last ${BOOKS_DAYS} UTC days, newest first.` }),
  })
  .meta({ id: "TrialBalance" });

export type TrialBalance = z.infer<typeof trialBalanceSchema>;
export type TrialBalanceLine = z.infer<typeof trialBalanceLineSchema>;

// $1 user ids or null, $2 limit. Each house account's sum, read from the partial index ledger_postings_house_idx
// (account, posted_at, id) INCLUDE (amount_minor) alone: `p.account <> 'wallet'` is the index's own predicate,
// written out because the planner cannot prove it from `p.account = a.name`. Exported for its plan's test
// (tests/integration/books-admin.test.ts).
export const HOUSE_SUMS_SQL = `
SELECT a.name, a.normal_side, a.description, s.sum_minor::text
  FROM ledger_accounts a
 CROSS JOIN LATERAL (
       SELECT COALESCE(SUM(p.amount_minor::numeric), 0) AS sum_minor FROM ledger_postings p
        WHERE p.account = a.name AND p.account <> 'wallet'
          AND ($1::text[] IS NULL OR p.user_id = ANY ($1::text[]))) s
 WHERE a.kind = 'house'
 ORDER BY a.normal_side DESC, a.name
 LIMIT $2`;

// $1 user ids or null. The wallet accounts from the wallets' rows (balance − debt: one row per user, not the ledger's
// postings); the audit's wallet_accounts_match holds each equal to the sum of its postings.
const WALLET_LINES_SQL = `
SELECT COALESCE(SUM(w.account_minor) FILTER (WHERE w.account_minor > 0), 0)::text AS above_minor,
       COALESCE(SUM(w.account_minor) FILTER (WHERE w.account_minor < 0), 0)::text AS below_minor,
       count(*) FILTER (WHERE w.account_minor > 0)::int AS above_users,
       count(*) FILTER (WHERE w.account_minor < 0)::int AS below_users,
       (SELECT description FROM ledger_accounts WHERE name = 'wallet') AS description
  FROM (SELECT balance_minor::numeric - debt_minor::numeric AS account_minor FROM wallets
         WHERE $1::text[] IS NULL OR user_id = ANY ($1::text[])) w`;

// $1 user ids or null, $2 the first UTC day, $3 limit. Each house account's postings per UTC day since the first
// day, a range of the same partial index per account.
const HOUSE_DAYS_SQL = `
SELECT a.name, a.normal_side, to_char(c.day, 'YYYY-MM-DD') AS day, c.sum_minor::text
  FROM ledger_accounts a
 CROSS JOIN LATERAL (
       SELECT (p.posted_at AT TIME ZONE 'UTC')::date AS day, SUM(p.amount_minor::numeric) AS sum_minor
         FROM ledger_postings p
        WHERE p.account = a.name AND p.account <> 'wallet'
          AND p.posted_at >= $2::date::timestamp AT TIME ZONE 'UTC'
          AND ($1::text[] IS NULL OR p.user_id = ANY ($1::text[]))
        GROUP BY 1) c
 WHERE a.kind = 'house'
 ORDER BY c.day DESC, a.name
 LIMIT $3`;

/** Minor units from a numeric sum's text (an integer: the sums are of bigint columns), exact at any size. */
function minorOf(text: string): bigint {
  return BigInt(text);
}

/** A balance as its normal side shows it. */
function shown(sumMinor: bigint, normalSide: "debit" | "credit"): bigint {
  return normalSide === "debit" ? -sumMinor : sumMinor;
}

/** The house accounts' lines and the two wallet lines. */
async function readLines(db: PoolClient, scope: AuditScope): Promise<TrialBalanceLine[]> {
  const [house, wallets] = await Promise.all([
    db.query<{ name: string; normal_side: "debit" | "credit"; description: string; sum_minor: string }>(
      HOUSE_SUMS_SQL,
      [scope.userIds, ACCOUNTS_MAX],
    ),
    db.query<{
      above_minor: string;
      below_minor: string;
      above_users: number;
      below_users: number;
      description: string;
    }>(WALLET_LINES_SQL, [scope.userIds]),
  ]);
  const lines: TrialBalanceLine[] = house.rows.map((row) => {
    const sumMinor = minorOf(row.sum_minor);
    return {
      account: row.name,
      line: "house",
      normalSide: row.normal_side,
      description: row.description,
      sumMinor: String(sumMinor),
      balanceMinor: String(shown(sumMinor, row.normal_side)),
      users: null,
    };
  });
  const w = wallets.rows[0]!;
  const wallet = { account: "wallet", normalSide: "credit", description: w.description } as const;
  const above = String(minorOf(w.above_minor));
  const below = String(minorOf(w.below_minor));
  lines.push({ ...wallet, line: "owed_to_users", sumMinor: above, balanceMinor: above, users: w.above_users });
  lines.push({ ...wallet, line: "owed_by_users", sumMinor: below, balanceMinor: below, users: w.below_users });
  return lines;
}

/** The last {@link BOOKS_DAYS} UTC days, newest first, each with every house account's change and the wallets'. */
async function readDays(db: PoolClient, scope: AuditScope, houseAccounts: string[]): Promise<TrialBalance["days"]> {
  const today = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const days = Array.from({ length: BOOKS_DAYS }, (_, i) => {
    const changes: Record<string, bigint> = Object.fromEntries([...houseAccounts, "wallets"].map((name) => [name, 0n]));
    return { day: new Date(today - i * DAY_MS).toISOString().slice(0, 10), changes };
  });
  const result = await db.query<{ name: string; normal_side: "debit" | "credit"; day: string; sum_minor: string }>(
    HOUSE_DAYS_SQL,
    [scope.userIds, days[days.length - 1]!.day, ACCOUNTS_MAX * BOOKS_DAYS],
  );
  for (const row of result.rows) {
    const day = days.find((d) => d.day === row.day);
    if (!day) continue;
    const sumMinor = minorOf(row.sum_minor);
    day.changes[row.name] = shown(sumMinor, row.normal_side);
    // The wallets' change is what the house accounts did not keep: each transaction's legs sum to zero.
    day.changes.wallets = (day.changes.wallets ?? 0n) - sumMinor;
  }
  return days.map((d) => ({
    day: d.day,
    changes: Object.fromEntries(Object.entries(d.changes).map(([name, minor]) => [name, String(minor)])),
  }));
}

/**
 * Reads the trial balance: each house account (sum of its postings, through the partial index
 * `ledger_postings_house_idx`, an index-only scan per account), the wallet accounts above zero ("owed to users") and
 * below zero ("owed by users", debts) from the `wallets` rows (balance − debt, one row per user; contract section
 * 13.1), the total of all lines (0 when the books balance: contract section 13.3 `books_balanced`), and the last
 * {@link BOOKS_DAYS} UTC days' change of each house account and of the wallets together.
 *
 * @param scope only these users' postings and wallets (a test sharing its database); by default the whole ledger.
 * @returns amounts in minor units of the wallet's currency (WALLET_CURRENCY); read-only, bounded by the chart's size
 *   and the days. A total other than 0 is a value (`balanced: false`), not an error: the page flags it.
 * All of it is read in one snapshot (`withReadSnapshot`), so movements committing meanwhile never unbalance it.
 * @throws database errors.
 */
export async function readTrialBalance(scope: AuditScope = WHOLE_LEDGER): Promise<TrialBalance> {
  // One snapshot for every read: a movement committing between the house sums and the wallets would otherwise show
  // as books that do not balance.
  const { lines, days } = await withReadSnapshot(async (db) => {
    const read = await readLines(db, scope);
    const houseAccounts = read.filter((line) => line.line === "house").map((line) => line.account);
    return { lines: read, days: await readDays(db, scope, houseAccounts) };
  });
  const totalMinor = lines.reduce((sum, line) => sum + BigInt(line.sumMinor), 0n);
  return { currency: env().WALLET_CURRENCY, lines, totalMinor: String(totalMinor), balanced: totalMinor === 0n, days };
}
