"use client";
/**
 * The wallet's statement: every movement, the first page from the server, "Show more" for the next ones (cursor
 * pages). Each line says what it was in plain words ("Top-up", "Payment", "Reward for ad A", "Late bank credit"),
 * never an internal reference of a reward; a failed line shows that no money moved. A table on a wide screen,
 * cards on a phone.
 */
import type { LedgerType, StatementEntryView } from "@/lib/ledger";
import { adNameOf } from "@/lib/rewards/offered-ads";
import { LocalTime } from "../components/local-time";
import { ShowMoreButton } from "../components/show-more-button";
import { StatusBadge } from "../components/status-badge";
import { useShowMore } from "../components/use-show-more";
import { moreStatementAction } from "./list-actions";
import { MovementAmount } from "./movement-amount";

/** What a statement line was, for people, and the reference worth showing (none for a reward). */
function describeEntry(entry: StatementEntryView): { what: string; reference: string | null } {
  switch (entry.type) {
    case "topup":
      return { what: "Top-up", reference: entry.refId };
    case "payment":
      return { what: "Payment", reference: entry.refId };
    case "reward":
      // The ref id is `<adId>:<day>` (contract section 6); people know the ad, not the key.
      return { what: `Reward for ${adNameOf(entry.refId.replace(/:[^:]*$/, ""))}`, reference: null };
    case "adjustment":
      // A charge the bank confirmed after its top-up had failed (contract section 5); the ref id is the charge id.
      return { what: "Late bank credit for a failed top-up", reference: null };
    case "refund":
      // Money sent back to the bank on a top-up (contract section 11); the ref id is the refund's own id.
      return { what: "Refund of a top-up", reference: entry.refId };
    case "chargeback":
      // A dispute the bank closed against a top-up (contract section 12); the ref id is the bank's dispute id.
      return { what: "Money taken back: the bank upheld a dispute of a top-up", reference: null };
    case "chargeback_reversal":
      return { what: "Money returned: the bank reversed a dispute in your favour", reference: null };
  }
}

/**
 * `first` is the server's first page; `directions` is the ledger's LEDGER_DIRECTION table (+1 credit, -1 debit),
 * passed by the server page because a client component cannot import the ledger index (it reaches the database).
 */
export function StatementTable({
  first,
  directions,
}: {
  first: { items: StatementEntryView[]; nextCursor: string | null };
  directions: Readonly<Record<LedgerType, 1 | -1>>;
}) {
  const { items, nextCursor, pending, error, showMore } = useShowMore(first, moreStatementAction);
  if (items.length === 0) return <p>No movements yet.</p>;
  return (
    <>
      <table data-testid="statement" className="cards">
        <caption className="sr-only">Every movement of your wallet, newest first</caption>
        <thead>
          <tr>
            <th scope="col">What</th>
            <th scope="col">Amount</th>
            <th scope="col">Status</th>
            <th scope="col">Time</th>
          </tr>
        </thead>
        <tbody>
          {items.map((e) => {
            const { what, reference } = describeEntry(e);
            return (
              <tr key={`${e.type}:${e.refId}`} data-type={e.type} data-status={e.status}>
                <td data-label="What">
                  <span>
                    <span className="what">{what}</span>
                    {reference && <span className="mono ref-cell"> {reference}</span>}
                  </span>
                </td>
                <td data-label="Amount" className="amount-cell">
                  <MovementAmount
                    amountMinor={e.amount}
                    currency={e.currency}
                    direction={directions[e.type]}
                    status={e.status}
                  />
                </td>
                <td data-label="Status">
                  <StatusBadge status={e.status} failureReason={e.failureReason} />
                </td>
                <td data-label="Time" className="nowrap">
                  <LocalTime iso={e.createdAt} />
                </td>
              </tr>
            );
          })}
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
