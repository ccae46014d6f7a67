"use client";
/** The admin page's top-up table: the first page from the server, "Show more" for the next ones. */
import Link from "next/link";
import { formatMinor } from "@/lib/money";
import { describeFailure } from "@/lib/web/failure-reasons";
import { ShowMoreButton } from "../components/show-more-button";
import { useShowMore } from "../components/use-show-more";
import { moreAdminTopupsAction } from "./actions";
import type { AdminTopupFilters, AdminTopupRow } from "./admin-topup-rows";
import { shortTime } from "./short-time";

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
        <table data-testid="admin-topups">
          <thead>
            <tr>
              <th>Reference</th>
              <th>User</th>
              <th>Amount</th>
              <th>Status</th>
              <th>Bank charge</th>
              <th>Lease</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {items.map((t) => {
              const { stuck } = t;
              return (
                <tr
                  key={`${t.userId}:${t.refId}`}
                  className={stuck ? "stuck" : undefined}
                  data-ref={t.refId}
                  data-status={t.status}
                  data-stuck={stuck}
                >
                  <td>
                    <Link href={`/admin/topups/${encodeURIComponent(t.userId)}/${encodeURIComponent(t.refId)}`}>
                      {t.refId}
                    </Link>
                  </td>
                  <td title={t.userId}>{t.userEmail}</td>
                  <td>
                    {formatMinor(t.amount)} {t.currency}
                  </td>
                  <td className={`status ${t.status}`}>
                    {t.status}
                    {stuck ? " (stuck)" : ""}
                    {t.failureReason ? ` — ${describeFailure(t.failureReason)}` : ""}
                  </td>
                  <td className="mono">{t.chargeId ?? "—"}</td>
                  <td>
                    {t.leaseOwner ? (
                      <>
                        {t.leaseOwner} (attempt {t.attempt}) until {shortTime(t.leaseExpiresAt)}
                      </>
                    ) : (
                      "—"
                    )}
                  </td>
                  <td>
                    <time dateTime={t.createdAt}>{shortTime(t.createdAt)}</time>
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
        testId="admin-topups-more"
      />
    </>
  );
}
