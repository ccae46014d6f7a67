"use client";
/** The wallet's statement: the first page from the server, "Show more" for the next ones. */
import type { StatementEntryView } from "@/lib/ledger";
import { formatMinor } from "@/lib/money";
import { describeFailure } from "@/lib/web/failure-reasons";
import { ShowMoreButton } from "../components/show-more-button";
import { useShowMore } from "../components/use-show-more";
import { moreStatementAction } from "./list-actions";
import { STATUS_LABEL } from "./status-label";

export function StatementTable({ first }: { first: { items: StatementEntryView[]; nextCursor: string | null } }) {
  const { items, nextCursor, pending, error, showMore } = useShowMore(first, moreStatementAction);
  if (items.length === 0) return <p>No movements yet.</p>;
  return (
    <>
      <table data-testid="statement">
        <thead>
          <tr>
            <th>Type</th>
            <th>Reference</th>
            <th>Amount</th>
            <th>Status</th>
            <th>Time</th>
          </tr>
        </thead>
        <tbody>
          {items.map((e) => (
            <tr key={`${e.type}:${e.refId}`} data-status={e.status}>
              <td>{e.type}</td>
              <td>{e.refId}</td>
              <td>
                {e.type === "payment" ? "−" : "+"}
                {formatMinor(e.amount)} {e.currency}
              </td>
              <td className={`status ${e.status}`}>
                {STATUS_LABEL[e.status]}
                {e.failureReason ? ` — ${describeFailure(e.failureReason)}` : ""}
              </td>
              <td>
                <time dateTime={e.createdAt}>{e.createdAt.replace("T", " ").slice(0, 19)} UTC</time>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ShowMoreButton
        nextCursor={nextCursor}
        pending={pending}
        error={error}
        onClick={showMore}
        testId="statement-more"
      />
    </>
  );
}
