"use client";
/**
 * The wallet's top-ups: the first page from the server, "Show more" for the next ones (cursor pages). A table on a
 * wide screen and a list of cards on a phone (the same markup; globals.css `table.cards`). A failed top-up's amount
 * is struck through and says it was not charged: no money moved.
 */
import type { TopupView } from "@/lib/ledger";
import { LocalTime } from "../components/local-time";
import { ShowMoreButton } from "../components/show-more-button";
import { StatusBadge } from "../components/status-badge";
import { useShowMore } from "../components/use-show-more";
import { moreTopupsAction } from "./list-actions";
import { MovementAmount } from "./movement-amount";

export function TopupsTable({ first }: { first: { items: TopupView[]; nextCursor: string | null } }) {
  const { items, nextCursor, pending, error, showMore } = useShowMore(first, moreTopupsAction);
  if (items.length === 0) return <p>No top-ups yet.</p>;
  return (
    <>
      <table data-testid="topups" className="cards">
        <caption className="sr-only">Your top-ups, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Amount</th>
            <th scope="col">Status</th>
            <th scope="col">Time</th>
            <th scope="col">Reference</th>
          </tr>
        </thead>
        <tbody>
          {items.map((t) => (
            <tr key={t.refId} data-ref={t.refId} data-status={t.status}>
              <td data-label="Amount" className="amount-cell">
                <MovementAmount amountMinor={t.amount} currency={t.currency} direction={1} status={t.status} />
              </td>
              <td data-label="Status">
                <StatusBadge status={t.status} failureReason={t.failureReason} />
              </td>
              <td data-label="Time" className="nowrap">
                <LocalTime iso={t.createdAt} />
              </td>
              <td data-label="Reference" className="mono ref-cell">
                {t.refId}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ShowMoreButton nextCursor={nextCursor} pending={pending} error={error} onClick={showMore} testId="topups-more" />
    </>
  );
}
