import type { Metadata } from "next";
import { forbidden, notFound } from "next/navigation";
import Link from "next/link";
import { listAccountPostings } from "@/lib/admin/list-account-postings";
import { accountPostingsQuerySchema, parseQuery } from "@/lib/http/list-query";
import { formatMoney } from "@/lib/money";
import { AdminNav } from "../../admin-nav";
import { currentAdmin } from "../../require-admin";
import { timelineHref } from "../../timeline-href";
import { UtcTime } from "../../utc-time";
import { accountLabel, EVENT_WORDS, MOVEMENT_WORDS, sentence } from "../account-words";
import "../../admin.css";

export const metadata: Metadata = { title: "Account postings" };
export const dynamic = "force-dynamic";

type SearchParams = Record<string, string | string[] | undefined>;

/** The first value of a query parameter, or undefined. */
function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Decodes a path segment once; a malformed escape is kept as it is (it then names no account: 404). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * One house account's postings, newest first, 50 a page (contract section 13.5): when, the movement (its kind, its
 * readable reference, a link to the top-up's admin timeline where there is one), the user and the amount. Pages by
 * `?cursor=` in the address ("Older postings"), so paging works with the keyboard and without JavaScript. A name that
 * is not a house account (the per-user `wallet` included) is the 404 page. Admins only.
 */
export default async function AccountPostingsPage({
  params,
  searchParams,
}: {
  params: Promise<{ account: string }>;
  searchParams: Promise<SearchParams>;
}) {
  const admin = await currentAdmin();
  if (!admin) forbidden();
  const account = decodeSegment((await params).account);
  const given = first((await searchParams).cursor);
  const query = parseQuery(accountPostingsQuerySchema, new URLSearchParams(given ? { cursor: given } : {}));
  const cursor = query.ok ? query.value.cursor : undefined;
  let result = await listAccountPostings({ account, cursor });
  // A position not understood starts the list again from the newest posting, and says so.
  const refused = !query.ok || result.kind === "invalid_cursor";
  if (result.kind === "invalid_cursor") result = await listAccountPostings({ account });
  if (result.kind !== "page") notFound();
  const self = `/admin/books/${encodeURIComponent(result.account.name)}`;

  return (
    <main className="admin">
      <AdminNav current="books" />
      <p>
        <Link href="/admin/books">← Books</Link>
      </p>
      <section className="card" aria-labelledby="postings-heading" data-testid="account-postings">
        <h1 id="postings-heading">{accountLabel(result.account.name)}</h1>
        <p>
          {sentence(result.account.description)}. Normal side: {result.account.normalSide}
          {result.account.normalSide === "debit"
            ? " (an asset: its balance is minus the sum of its postings, so each amount below is shown that way)."
            : " (its balance is the sum of its postings)."}{" "}
          Newest first; times in UTC.
        </p>
        {refused && (
          <p role="alert" className="form-error">
            That page's position was not understood (a cursor of another list, or not a cursor): showing the newest
            postings.
          </p>
        )}
        {result.items.length === 0 ? (
          <p>No postings.</p>
        ) : (
          <table className="cards admin-table" data-testid="postings">
            <caption className="sr-only">Postings of {accountLabel(result.account.name)}, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time (UTC)</th>
                <th scope="col">Movement</th>
                <th scope="col">User</th>
                <th scope="col" className="num">
                  Amount
                </th>
              </tr>
            </thead>
            <tbody>
              {result.items.map((posting) => (
                <tr key={posting.id} data-posting={posting.id} data-type={posting.type} data-event={posting.event}>
                  <td data-label="Time (UTC)" className="nowrap">
                    <UtcTime iso={posting.postedAt} />
                  </td>
                  <td data-label="Movement">
                    <span>
                      {MOVEMENT_WORDS[posting.type]}
                      {EVENT_WORDS[posting.event] ? `: ${EVENT_WORDS[posting.event]}` : ""}{" "}
                      <code title={posting.refId}>{posting.reference}</code>
                      {posting.topupRefId !== null && (
                        <>
                          {" "}
                          <Link href={timelineHref({ userId: posting.userId, refId: posting.topupRefId })}>
                            top-up timeline
                          </Link>
                        </>
                      )}
                    </span>
                  </td>
                  <td data-label="User" className="clip">
                    <span title={`${posting.userEmail ?? "(account deleted)"}, user ${posting.userId}`}>
                      {posting.userEmail ?? "(account deleted)"}
                    </span>
                  </td>
                  <td data-label="Amount" className="num nowrap">
                    {formatMoney(posting.balanceChangeMinor, posting.currency, { sign: "always" })}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <nav aria-label="Pages of postings" className="postings-pager">
          {cursor && !refused && <Link href={self}>Newest postings</Link>}
          {result.nextCursor !== null && (
            <Link href={`${self}?cursor=${encodeURIComponent(result.nextCursor)}`} rel="next">
              Older postings
            </Link>
          )}
        </nav>
      </section>
    </main>
  );
}
