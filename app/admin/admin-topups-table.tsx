"use client";
/**
 * The admin page's top-up table: the first page from the server, "Show more" for the next ones (cursor pages). At
 * 1280 px every column stays on one line (long references and emails are cut with "…" and shown whole on hover and
 * in the row's timeline); on a phone each row is a card. Charge ids are never broken and have a copy button.
 */
import Link from "next/link";
import { formatMoney } from "@/lib/money";
import { isUnfinished } from "@/lib/web/status-words";
import { UtcTime } from "./utc-time";
import { ShowMoreButton } from "../components/show-more-button";
import { StatusBadge } from "../components/status-badge";
import { useShowMore } from "../components/use-show-more";
import { moreAdminTopupsAction } from "./actions";
import type { AdminTopupFilters, AdminTopupRow } from "./admin-topup-rows";
import { ChargeId } from "./charge-id";
import { timelineHref } from "./timeline-href";

export function AdminTopupsTable({
  first,
  filters,
}: {
  first: { items: AdminTopupRow[]; nextCursor: string | null };
  filters: AdminTopupFilters;
}) {
  const { items, nextCursor, pending, error, showMore } = useShowMore(first, (cursor) =>
    moreAdminTopupsAction(filters, cursor),
  );
  return (
    <>
      {items.length === 0 ? (
        <p>No top-ups match.</p>
      ) : (
        <table data-testid="admin-topups" className="cards admin-table topups-table">
          <caption className="sr-only">Top-ups, newest first</caption>
          <thead>
            <tr>
              <th scope="col" className="col-ref">
                Top-up
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
                Bank charge
              </th>
              <th scope="col" className="col-created">
                Created
              </th>
            </tr>
          </thead>
          <tbody>
            {items.map((t) => (
              <tr
                key={`${t.userId}:${t.refId}`}
                className={t.stuck ? "stuck" : undefined}
                data-ref={t.refId}
                data-status={t.status}
                data-stuck={t.stuck}
              >
                <td data-label="Top-up" className="clip">
                  <Link href={timelineHref(t)} className="mono" title={t.refId}>
                    {t.refId}
                  </Link>
                </td>
                <td data-label="User" className="clip">
                  <span title={`${t.userEmail} (${t.userId})`}>{t.userEmail}</span>
                </td>
                <td data-label="Amount" className="num nowrap">
                  {formatMoney(t.amount, t.currency)}
                </td>
                <td data-label="Status">
                  <StatusBadge
                    status={t.status}
                    failureReason={t.failureReason}
                    extra={t.stuck ? "stuck" : undefined}
                  />
                  {isUnfinished(t.status) && t.leaseExpiresAt && (
                    <span className="reason" title={t.leaseOwner ?? undefined}>
                      lease until <UtcTime iso={t.leaseExpiresAt} /> (attempt {t.attempt})
                    </span>
                  )}
                </td>
                <td data-label="Bank charge" className="nowrap">
                  <ChargeId chargeId={t.chargeId} none="none yet" />
                </td>
                <td data-label="Created" className="nowrap">
                  <UtcTime iso={t.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ShowMoreButton
        nextCursor={nextCursor}
        pending={pending}
        error={error}
        onClick={showMore}
        testId="admin-topups-more"
      />
    </>
  );
}
