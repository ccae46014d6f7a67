import type { Metadata } from "next";
import Link from "next/link";
import { requireSessionUser } from "@/lib/auth/session-user";
import { parseQuery, STATEMENT_DAYS_MAX, statementQuerySchema } from "@/lib/http/list-query";
import { formatMoney } from "@/lib/money";
import { readStatement, type StatementPage } from "@/lib/wallet/read-statement";
import type { PageQuery } from "../history-section";
import { STATEMENT_PAGE_SIZE } from "../page-sizes";

export const metadata: Metadata = { title: "Statement" };
export const dynamic = "force-dynamic";

const DAY_MS = 86_400_000;
/** The range shown when none is asked for: the last 30 UTC days, today included. */
const DEFAULT_DAYS = 30;

function firstOf(value: string | string[] | undefined): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return first === "" ? undefined : first;
}

/** The page address's range and cursor, defaults filled in (the last 30 days), as the API's query would be. */
function queryOf(query: PageQuery): URLSearchParams {
  const today = new Date().toISOString().slice(0, 10);
  const params = new URLSearchParams({
    from: firstOf(query.from) ?? new Date(Date.now() - (DEFAULT_DAYS - 1) * DAY_MS).toISOString().slice(0, 10),
    to: firstOf(query.to) ?? today,
  });
  const cursor = firstOf(query.cursor);
  if (cursor !== undefined) params.set("cursor", cursor);
  return params;
}

/** `2026-12-02T08:15:30.123456Z` as people read a UTC time: `2026-12-02 08:15:30`. */
function utcText(postedAt: string): string {
  return `${postedAt.slice(0, 10)} ${postedAt.slice(11, 19)}`;
}

/** A running balance in words: the amount, or what is owed when the account is below zero. */
function balanceText(accountMinor: number, currency: string): string {
  return accountMinor < 0 ? `${formatMoney(-accountMinor, currency)} owed` : formatMoney(accountMinor, currency);
}

function StatementTable({ page }: { page: StatementPage }) {
  if (page.lines.length === 0) return <p data-testid="statement-empty">No movements in these days.</p>;
  return (
    <table className="cards statement-table" data-testid="statement">
      <caption className="sr-only">
        Movements from {page.from} to {page.to}, oldest first
      </caption>
      <thead>
        <tr>
          <th scope="col">Posted (UTC)</th>
          <th scope="col">What</th>
          <th scope="col">Counterparty</th>
          <th scope="col">Reference</th>
          <th scope="col" className="num">
            Amount
          </th>
          <th scope="col" className="num">
            Balance
          </th>
        </tr>
      </thead>
      <tbody>
        {page.lines.map((line) => (
          <tr key={`${line.reference}-${line.event}`} data-kind={line.kind} data-balance-after={line.balanceAfter}>
            <td data-label="Posted (UTC)" className="nowrap">
              {utcText(line.postedAt)}
            </td>
            <td data-label="What">
              {line.description}
              {line.note && <span className="reason">{line.note}</span>}
            </td>
            <td data-label="Counterparty">{line.counterparty}</td>
            <td data-label="Reference" className="mono">
              {line.reference}
            </td>
            <td data-label="Amount" className="num">
              <span className={`amount ${line.amount > 0 ? "credit" : "debit"}`}>
                {formatMoney(line.amount, line.currency, { sign: "always" })}
              </span>
            </td>
            <td data-label="Balance" className="num amount" data-testid="running-balance">
              {balanceText(line.balanceAfter, line.currency)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/**
 * The signed-in user's statement (contract section 13.4): every posting to the wallet account in a range of UTC days
 * (the last 30 by default), oldest first, with the running balance after each, the opening balance, a link to the
 * next page (cursor pages) and the CSV download of the same days. The range is a plain GET form, so it lives in the
 * page's address and works without JavaScript; a range the API refuses is said in words.
 */
export default async function StatementPageView({ searchParams }: { searchParams: Promise<PageQuery> }) {
  const user = await requireSessionUser();
  const params = queryOf(await searchParams);
  const query = parseQuery(statementQuerySchema, params);
  const page = query.ok ? await readStatement(user.userId, { ...query.value, limit: STATEMENT_PAGE_SIZE }) : null;
  const from = params.get("from") ?? "";
  const to = params.get("to") ?? "";
  const csvHref = `/api/v1/statement.csv?${new URLSearchParams({ from, to })}`;
  return (
    <main className="statement">
      <p>
        <Link href="/wallet">← Back to the wallet</Link>
      </p>
      <section className="card" aria-labelledby="statement-heading">
        <h1 id="statement-heading">Statement</h1>
        <form method="get" action="/wallet/statement" className="history-filters" data-testid="statement-range">
          <label className="field">
            <span>From (UTC day)</span>
            <input type="date" name="from" defaultValue={from} required />
          </label>
          <label className="field">
            <span>To (UTC day)</span>
            <input type="date" name="to" defaultValue={to} required />
          </label>
          <p className="history-filter-actions">
            <button type="submit">Show</button>
          </p>
        </form>
        {page === null || !page.ok ? (
          <p role="alert" data-testid="statement-invalid">
            These days cannot be shown: a first day no later than the last, at most {STATEMENT_DAYS_MAX} days in all.{" "}
            <Link href="/wallet/statement">Show the last {DEFAULT_DAYS} days</Link>.
          </p>
        ) : (
          <>
            <p className="statement-actions">
              <a href={csvHref} download data-testid="statement-csv">
                Download these days as CSV
              </a>
            </p>
            <p data-testid="opening-balance" data-opening-minor={page.openingBalance}>
              Balance at the start of {page.from}: <strong>{balanceText(page.openingBalance, page.currency)}</strong>
            </p>
            <StatementTable page={page} />
            {page.nextCursor !== null && (
              <p>
                <a
                  href={`/wallet/statement?${new URLSearchParams({ from, to, cursor: page.nextCursor })}`}
                  data-testid="statement-next"
                >
                  Later movements
                </a>
              </p>
            )}
          </>
        )}
      </section>
    </main>
  );
}
