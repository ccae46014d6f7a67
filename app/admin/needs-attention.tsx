/**
 * The top of the admin page: the top-ups and refunds a person should look at now. First the flagged top-ups, whose
 * settlement kept failing until SETTLE_ATTEMPTS_MAX (contract section 5; lib/admin/list-flagged-topups.ts), each with
 * how often and the last error; then the stuck ones (unfinished with an expired lease, or unfinished for more than
 * five minutes: lib/admin/stuck.ts), newest first; then the refunds flagged or stuck the same way (case C28:
 * lib/admin/list-refunds-needing-attention.ts), each linking to its top-up's timeline, which lists it; last the
 * payouts flagged, unknown for long or returned (lib/admin/list-payouts-needing-attention.ts), each linking to its
 * payout's timeline.
 */
import Link from "next/link";
import type { FlaggedTopupView } from "@/lib/admin/list-flagged-topups";
import type { AdminTopupView } from "@/lib/admin/list-admin-topups";
import type { PayoutNeedingAttention } from "@/lib/admin/list-payouts-needing-attention";
import type { RefundNeedingAttention } from "@/lib/admin/list-refunds-needing-attention";
import { formatMoney } from "@/lib/money";
import { UtcTime } from "./utc-time";
import { StatusBadge } from "../components/status-badge";
import { PayoutAttentionRows } from "./payout-attention-rows";
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

/** One refund: its reference, owner, amount, state and why it is listed, linking to its top-up's timeline. */
function RefundRow({ row }: { row: RefundNeedingAttention }) {
  const why = row.settleFlaggedAt ? "flagged" : "stuck";
  return (
    <li data-ref={row.refundId} data-why={why} data-type="refund">
      Refund{" "}
      <Link
        href={timelineHref({ userId: row.userId, refId: row.topupRefId })}
        className="mono clip-inline"
        title={row.refundId}
      >
        {row.refundId}
      </Link>{" "}
      <span className="clip-inline">{row.userEmail}</span> <strong>{formatMoney(row.amount, row.currency)}</strong>{" "}
      <StatusBadge status={row.status} extra={why} />{" "}
      {row.settleFlaggedAt ? (
        <span className="reason">
          settlement failed {row.settleFailures} times
          {row.settleLastError ? `: ${row.settleLastError}` : ""} (flagged <UtcTime iso={row.settleFlaggedAt} />)
        </span>
      ) : (
        <span className="muted">
          since <UtcTime iso={row.createdAt} />
        </span>
      )}
    </li>
  );
}

export function NeedsAttention({
  flagged,
  stuck,
  refunds,
  payouts,
  more,
}: {
  flagged: FlaggedTopupView[];
  stuck: AdminTopupView[];
  /** Refunds flagged or stuck (lib/admin/list-refunds-needing-attention.ts). */
  refunds: RefundNeedingAttention[];
  /** Payouts flagged, unknown for long or recently returned (lib/admin/list-payouts-needing-attention.ts). */
  payouts: PayoutNeedingAttention[];
  /** True when there are more stuck top-ups than listed. */
  more: boolean;
}) {
  // A flagged top-up is usually stuck too: listed once, as flagged.
  const flaggedKeys = new Set(flagged.map((row) => `${row.userId}:${row.refId}`));
  const stuckOnly = stuck.filter((row) => !flaggedKeys.has(`${row.userId}:${row.refId}`));
  const count = flagged.length + stuckOnly.length + refunds.length + payouts.length;
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
                  {row.settleLastError ? `: ${row.settleLastError}` : ""} (flagged <UtcTime iso={row.settleFlaggedAt} />
                  )
                </span>
              </AttentionRow>
            ))}
            {stuckOnly.map((row) => (
              <AttentionRow key={`${row.userId}:${row.refId}`} row={row} why="stuck">
                <span className="muted">
                  since <UtcTime iso={row.createdAt} />
                </span>
              </AttentionRow>
            ))}
            {refunds.map((row) => (
              <RefundRow key={`${row.userId}:${row.refundId}`} row={row} />
            ))}
            <PayoutAttentionRows rows={payouts} />
          </ul>
          {more && (
            <p>
              <Link href="/admin?stuck=1">All stuck top-ups</Link>
            </p>
          )}
          {payouts.length > 0 && (
            <p>
              <Link href="/admin/payouts">All payouts</Link>
            </p>
          )}
        </>
      )}
    </section>
  );
}
