/**
 * The top of the admin page: the top-ups a person should look at now. Stuck top-ups (unfinished with an expired
 * lease, or unfinished for more than five minutes: lib/admin/stuck.ts) are listed here, newest first, each linking
 * to its timeline; the settlement that keeps failing, once flagged (contract section 5, SETTLE_ATTEMPTS_MAX), joins
 * them as a row with its own reason.
 */
import Link from "next/link";
import type { AdminTopupView } from "@/lib/admin/list-admin-topups";
import { formatMoney } from "@/lib/money";
import { LocalTime } from "../components/local-time";
import { StatusBadge } from "../components/status-badge";
import { timelineHref } from "./timeline-href";

export function NeedsAttention({ rows, more }: { rows: AdminTopupView[]; more: boolean }) {
  return (
    <section
      className={`card attention${rows.length > 0 ? " alerting" : ""}`}
      aria-labelledby="attention-heading"
      data-testid="needs-attention"
    >
      <h2 id="attention-heading">Needs attention</h2>
      {rows.length === 0 ? (
        <p className="ok">Nothing is stuck.</p>
      ) : (
        <>
          <ul className="attention-list">
            {rows.map((row) => (
              <li key={`${row.userId}:${row.refId}`} data-ref={row.refId}>
                <Link href={timelineHref(row)} className="mono clip-inline" title={row.refId}>
                  {row.refId}
                </Link>{" "}
                <span className="clip-inline">{row.userEmail}</span>{" "}
                <strong>{formatMoney(row.amount, row.currency)}</strong>{" "}
                <StatusBadge status={row.status} extra="stuck" />{" "}
                <span className="muted">
                  since <LocalTime iso={row.createdAt} detail="seconds" />
                </span>
              </li>
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
