"use client";
/** The wallet's top-up list: the first page from the server, "Show more" for the next ones. */
import type { TopupView } from "@/lib/ledger";
import { formatMinor } from "@/lib/money";
import { describeFailure } from "@/lib/web/failure-reasons";
import { ShowMoreButton } from "../components/show-more-button";
import { useShowMore } from "../components/use-show-more";
import { moreTopupsAction } from "./list-actions";
import { STATUS_LABEL } from "./status-label";

export function TopupsTable({ first }: { first: { items: TopupView[]; nextCursor: string | null } }) {
  const { items, nextCursor, pending, error, showMore } = useShowMore(first, moreTopupsAction);
  if (items.length === 0) return <p>No top-ups yet.</p>;
  return (
    <>
      <table data-testid="topups">
        <thead>
          <tr>
            <th>Reference</th>
            <th>Amount</th>
            <th>Status</th>
            <th>Time</th>
          </tr>
        </thead>
        <tbody>
          {items.map((t) => (
            <tr key={t.refId} data-ref={t.refId} data-status={t.status}>
              <td>{t.refId}</td>
              <td>
                {formatMinor(t.amount)} {t.currency}
              </td>
              <td className={`status ${t.status}`}>
                {STATUS_LABEL[t.status]}
                {t.failureReason ? ` — ${describeFailure(t.failureReason)}` : ""}
              </td>
              <td>
                <time dateTime={t.createdAt}>{t.createdAt.replace("T", " ").slice(0, 19)} UTC</time>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ShowMoreButton nextCursor={nextCursor} pending={pending} error={error} onClick={showMore} testId="topups-more" />
    </>
  );
}
