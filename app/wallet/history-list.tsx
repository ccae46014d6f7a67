"use client";
/**
 * The wallet's history: every movement, one line each (what, amount, status; on a wide screen also the day and the
 * readable reference), newest first, each line a link to the movement's own page (its receipt and timeline). The
 * first page comes from the server with the filters of the page's address; "Show more" loads the next page of the
 * same filters (cursor pages). Never a raw reference in a line: the readable one (`PY-7K3Q-9D2M`) only.
 */
import type { LedgerType } from "@/lib/ledger";
import type { StatementFilters } from "@/lib/wallet/list-entries";
import type { StatementLine } from "@/lib/wallet/statement-line";
import { LocalTime } from "../components/local-time";
import { ShowMoreButton } from "../components/show-more-button";
import { StatusBadge } from "../components/status-badge";
import { useShowMore } from "../components/use-show-more";
import { moreHistoryAction } from "./list-actions";
import { MovementAmount } from "./movement-amount";
import { movementHref, splitMovementWords } from "./movement-words";

/** What the line was: "Payment to Corner Coffee", whose lead a phone leaves to screen readers. */
function MovementWords({ line }: { line: StatementLine }) {
  const { lead, main } = splitMovementWords(line);
  return (
    <span className="what">
      {lead && <span className="what-lead">{lead}</span>}
      {main}
    </span>
  );
}

/**
 * `first` is the server's first page for `filters`; `directions` is the ledger's LEDGER_DIRECTION table (+1
 * credit, -1 debit), passed by the server page because a client component cannot import the ledger index.
 */
export function HistoryList({
  first,
  filters,
  directions,
  filtered,
}: {
  first: { items: StatementLine[]; nextCursor: string | null };
  filters: StatementFilters;
  directions: Readonly<Record<LedgerType, 1 | -1>>;
  /** Whether any filter is set (the empty list then says that nothing matched). */
  filtered: boolean;
}) {
  const { items, nextCursor, pending, error, showMore } = useShowMore(first, (cursor) =>
    moreHistoryAction(cursor, filters),
  );
  if (items.length === 0) {
    return <p data-testid="history-empty">{filtered ? "No movement matches these filters." : "No movements yet."}</p>;
  }
  return (
    <>
      <ol className="history" data-testid="history" aria-label="Movements, newest first">
        {items.map((line) => (
          <li key={line.reference} data-type={line.type} data-status={line.status} data-ref={line.refId}>
            <a href={movementHref(line.reference)} className="history-line">
              <span className="history-what">
                <MovementWords line={line} />
                {line.note && <span className="history-note"> · {line.note}</span>}
              </span>
              <span className="history-when">
                <LocalTime iso={line.createdAt} />
              </span>
              <span className="history-ref mono">{line.reference}</span>
              <span className="history-amount">
                <MovementAmount
                  amountMinor={line.amount}
                  currency={line.currency}
                  direction={directions[line.type]}
                  status={line.status}
                />
              </span>
              <span className="history-status">
                <StatusBadge status={line.status} />
              </span>
            </a>
          </li>
        ))}
      </ol>
      <ShowMoreButton
        nextCursor={nextCursor}
        pending={pending}
        error={error}
        onClick={showMore}
        testId="history-more"
      />
    </>
  );
}
