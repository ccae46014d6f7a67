"use client";
/**
 * The admin payouts list: the first page from the server, "Show more" for the next ones (cursor pages). At 1280 px
 * every column stays on one line (long references and emails are cut with "…", whole on hover and in the payout's
 * timeline); on a phone each row is a card. An unfinished payout older than the stuck age is marked: its outcome is
 * unknown and its money held until the bank says.
 */
import Link from "next/link";
import type { AdminPayoutView } from "@/lib/admin/list-admin-payouts";
import { formatMoney } from "@/lib/money";
import { isUnfinished } from "@/lib/web/status-words";
import { ShowMoreButton } from "../../components/show-more-button";
import { StatusBadge } from "../../components/status-badge";
import { useShowMore } from "../../components/use-show-more";
import { ChargeId } from "../charge-id";
import { payoutHref } from "../payout-href";
import { UtcTime } from "../utc-time";
import { type AdminPayoutFilters, moreAdminPayoutsAction } from "./actions";

/** A qualifier after the state: returned, or unknown for longer than `stuckAgeMs` as of `nowMs`. */
function extraOf(p: AdminPayoutView, nowMs: number, stuckAgeMs: number): string | undefined {
  if (p.returnedAt) return "returned";
  if (isUnfinished(p.status) && nowMs - Date.parse(p.createdAt) > stuckAgeMs) return "stuck";
  return undefined;
}

export function AdminPayoutsTable({
  first,
  filters,
  nowMs,
  stuckAgeMs,
}: {
  first: { items: AdminPayoutView[]; nextCursor: string | null };
  filters: AdminPayoutFilters;
  /** When the server read the first page: the same "stuck" on the server's and the browser's render. */
  nowMs: number;
  stuckAgeMs: number;
}) {
  const { items, nextCursor, pending, error, showMore } = useShowMore(first, (cursor) =>
    moreAdminPayoutsAction(filters, cursor),
  );
  return (
    <>
      {items.length === 0 ? (
        <p>No payouts match.</p>
      ) : (
        <table data-testid="admin-payouts" className="cards admin-table topups-table">
          <caption className="sr-only">Payouts, newest first</caption>
          <thead>
            <tr>
              <th scope="col" className="col-ref">
                Payout
              </th>
              <th scope="col" className="col-user">
                User
              </th>
              <th scope="col" className="num col-amount">
                Amount
              </th>
              <th scope="col" className="col-status">
                Status
              </th>
              <th scope="col" className="col-charge">
                Bank payout
              </th>
              <th scope="col" className="col-created">
                Created
              </th>
            </tr>
          </thead>
          <tbody>
            {items.map((p) => {
              const extra = extraOf(p, nowMs, stuckAgeMs);
              return (
                <tr
                  key={`${p.userId}:${p.refId}`}
                  className={extra === "stuck" ? "stuck" : undefined}
                  data-ref={p.refId}
                  data-status={p.status}
                  data-extra={extra}
                >
                  <td data-label="Payout" className="clip">
                    <Link href={payoutHref(p)} className="mono" title={p.refId}>
                      {p.refId}
                    </Link>
                  </td>
                  <td data-label="User" className="clip">
                    <span title={`${p.userEmail} (${p.userId})`}>{p.userEmail}</span>
                  </td>
                  <td data-label="Amount" className="num nowrap">
                    {formatMoney(p.amount, p.currency)}
                  </td>
                  <td data-label="Status">
                    <StatusBadge status={p.status} failureReason={p.failureReason} extra={extra} />
                  </td>
                  <td data-label="Bank payout" className="nowrap">
                    <ChargeId chargeId={p.payoutId} none="none yet" what="payout id" />
                  </td>
                  <td data-label="Created" className="nowrap">
                    <UtcTime iso={p.createdAt} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <ShowMoreButton
        nextCursor={nextCursor}
        pending={pending}
        error={error}
        onClick={showMore}
        testId="admin-payouts-more"
      />
    </>
  );
}
