/**
 * The top of the admin page: the top-ups a person should look at now. First the flagged ones, whose settlement kept
 * failing until SETTLE_ATTEMPTS_MAX (contract section 5; lib/admin/list-flagged-topups.ts), each with how often and
 * the last error; then the stuck ones (unfinished with an expired lease, or unfinished for more than five minutes:
 * lib/admin/stuck.ts), newest first. Each links to its timeline.
 */
import Link from "next/link";
import type { FlaggedTopupView } from "@/lib/admin/list-flagged-topups";
import type { AdminTopupView } from "@/lib/admin/list-admin-topups";
import { formatMoney } from "@/lib/money";
import { LocalTime } from "../components/local-time";
import { StatusBadge } from "../components/status-badge";
import { timelineHref } from "./timeline-href";

/** One row: reference, owner, amount, state, and why it is listed. */
function AttentionRow({ row, why, children }: { row: AdminTopupView; why: string; children: React.ReactNode }) {
  return (
    <li data-ref={row.refId} data-why={why}>
      <Link href={timelineHref(row)} className="mono clip-inline" title={row.refId}>
        {row.refId}
      </Link>{" "}
      <span className="clip-inline">{row.userEmail}</span> <strong>{formatMoney(row.amount, row.currency)}</strong>{" "}
      <StatusBadge status={row.status} extra={why} /> {children}
    </li>
  );
}

export function NeedsAttention({
  flagged,
  stuck,
  more,
}: {
  flagged: FlaggedTopupView[];
  stuck: AdminTopupView[];
  /** True when there are more stuck top-ups than listed. */
  more: boolean;
}) {
  // A flagged top-up is usually stuck too: listed once, as flagged.
  const flaggedKeys = new Set(flagged.map((row) => `${row.userId}:${row.refId}`));
  const stuckOnly = stuck.filter((row) => !flaggedKeys.has(`${row.userId}:${row.refId}`));
  const count = flagged.length + stuckOnly.length;
  return (
    <section
      className={`card attention${count > 0 ? " alerting" : ""}`}
      aria-labelledby="attention-heading"
      data-testid="needs-attention"
    >
      <h2 id="attention-heading">Needs attention</h2>
      {count === 0 ? (
        <p className="ok">Nothing is stuck or flagged.</p>
      ) : (
        <>
          <ul className="attention-list">
            {flagged.map((row) => (
              <AttentionRow key={`${row.userId}:${row.refId}`} row={row} why="flagged">
                <span className="reason">
                  settlement failed {row.settleFailures} times
                  {row.settleLastError ? `: ${row.settleLastError}` : ""} (flagged{" "}
                  <LocalTime iso={row.settleFlaggedAt} detail="seconds" />)
                </span>
              </AttentionRow>
            ))}
            {stuckOnly.map((row) => (
              <AttentionRow key={`${row.userId}:${row.refId}`} row={row} why="stuck">
                <span className="muted">
                  since <LocalTime iso={row.createdAt} detail="seconds" />
                </span>
              </AttentionRow>
            ))}
          </ul>
          {more && (
            <p>
              <Link href="/admin?stuck=1">All stuck top-ups</Link>
            </p>
          )}
        </>
      )}
    </section>
  );
}
