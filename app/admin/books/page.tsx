import type { Metadata } from "next";
import { forbidden } from "next/navigation";
import Link from "next/link";
import { readTrialBalance, type TrialBalanceLine } from "@/lib/admin/read-trial-balance";
import { formatMoney } from "@/lib/money";
import { AdminNav } from "../admin-nav";
import { currentAdmin } from "../require-admin";
import { UtcTime } from "../utc-time";
import { accountLabel } from "./account-words";
import "../admin.css";

export const metadata: Metadata = { title: "Books" };
export const dynamic = "force-dynamic";

/** A line's name: a house account links to its postings; the wallet accounts are one per user and do not. */
function LineName({ line }: { line: TrialBalanceLine }) {
  if (line.line === "owed_to_users") return <>Wallets: owed to users</>;
  if (line.line === "owed_by_users") return <>Wallets: owed by users (debts)</>;
  return <Link href={`/admin/books/${encodeURIComponent(line.account)}`}>{accountLabel(line.account)}</Link>;
}

/**
 * The Books page (contract section 13.5): the trial balance (each house account, the wallet accounts above and below
 * zero, their debits and credits and the total of all accounts, flagged when it is not zero) and each account's change
 * over the last 14 UTC days. Admins only; every read is lib/admin/read-trial-balance.ts.
 */
export default async function BooksPage() {
  const admin = await currentAdmin();
  if (!admin) forbidden();
  const books = await readTrialBalance();
  // Sums arrive as decimal strings (they can pass 2^53); bigint keeps them exact.
  const money = (minor: string | bigint) => formatMoney(BigInt(minor), books.currency);
  const debits = books.lines.reduce(
    (sum, line) => sum + (BigInt(line.sumMinor) < 0n ? -BigInt(line.sumMinor) : 0n),
    0n,
  );
  const credits = books.lines.reduce(
    (sum, line) => sum + (BigInt(line.sumMinor) > 0n ? BigInt(line.sumMinor) : 0n),
    0n,
  );
  const columns = Object.keys(books.days[0]?.changes ?? {});

  return (
    <main className="admin">
      <AdminNav current="books" />
      <section className="card" aria-labelledby="books-heading">
        <h1 id="books-heading">Books</h1>
        <p className="muted">
          The trial balance, read at <UtcTime iso={new Date().toISOString()} />. A house account's balance is the sum of
          its postings (an asset, on the debit side, shown as minus that sum); the wallet lines are the users' wallets,
          balance minus debt, which the invariants hold equal to their postings.
        </p>
        {books.balanced ? (
          <p className="books-total ok" data-testid="books-total" data-balanced="true">
            All accounts together: {money(books.totalMinor)}. The books balance.
          </p>
        ) : (
          <p className="books-total unbalanced" role="alert" data-testid="books-total" data-balanced="false">
            The books do not balance: all accounts together sum to {money(books.totalMinor)}, not zero. The invariants
            on the <Link href="/admin">admin page</Link> name the transaction or wallet that is off.
          </p>
        )}
        <table className="cards admin-table trial-balance" data-testid="trial-balance">
          <caption className="sr-only">Trial balance, in {books.currency}</caption>
          <thead>
            <tr>
              <th scope="col">Account</th>
              <th scope="col">Normal side</th>
              <th scope="col" className="num">
                Debit
              </th>
              <th scope="col" className="num">
                Credit
              </th>
              <th scope="col" className="num">
                Balance as shown
              </th>
            </tr>
          </thead>
          <tbody>
            {books.lines.map((line) => (
              <tr key={`${line.account}:${line.line}`} data-account={line.account} data-line={line.line}>
                <td data-label="Account">
                  <span>
                    <LineName line={line} />
                    {line.users !== null && (
                      <span className="reason">{line.users === 1 ? "1 user" : `${line.users} users`}</span>
                    )}
                  </span>
                </td>
                <td data-label="Normal side">{line.normalSide}</td>
                <td data-label="Debit" className="num nowrap">
                  {BigInt(line.sumMinor) < 0n ? money(-BigInt(line.sumMinor)) : "—"}
                </td>
                <td data-label="Credit" className="num nowrap">
                  {BigInt(line.sumMinor) > 0n ? money(line.sumMinor) : "—"}
                </td>
                <td data-label="Balance as shown" className="num nowrap" data-balance={line.balanceMinor}>
                  {money(line.balanceMinor)}
                </td>
              </tr>
            ))}
            <tr className="total" data-testid="books-totals">
              <td data-label="Account">
                <strong>Total</strong>
              </td>
              <td data-label="Normal side">—</td>
              <td data-label="Debit" className="num nowrap">
                {money(debits)}
              </td>
              <td data-label="Credit" className="num nowrap">
                {money(credits)}
              </td>
              <td data-label="Balance as shown" className="num nowrap">
                —
              </td>
            </tr>
          </tbody>
        </table>
      </section>

      <section className="card" aria-labelledby="days-heading">
        <h2 id="days-heading">Change per day (UTC)</h2>
        <p className="muted">
          Each account's change of its balance as shown, per UTC day, newest first. Wallets: all users' accounts
          together, which is what the house accounts did not keep (every transaction sums to zero).
        </p>
        {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a box that scrolls sideways must take the focus, or a
            keyboard cannot scroll it (WCAG 2.1.1; axe-core: scrollable-region-focusable) */}
        <section className="scroll-box" aria-label="Change per day, as numbers" tabIndex={0}>
          <table className="numbers" data-testid="books-days">
            <thead>
              <tr>
                <th scope="col">Day (UTC)</th>
                {columns.map((name) => (
                  <th scope="col" key={name}>
                    {name === "wallets" ? "Wallets" : accountLabel(name)}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {books.days.map((day) => (
                <tr key={day.day} data-day={day.day}>
                  <th scope="row" className="nowrap">
                    {day.day}
                  </th>
                  {columns.map((name) => (
                    <td key={name} className="nowrap" data-account={name}>
                      {day.changes[name] && day.changes[name] !== "0"
                        ? formatMoney(BigInt(day.changes[name]), books.currency, { sign: "always" })
                        : "—"}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      </section>
    </main>
  );
}
