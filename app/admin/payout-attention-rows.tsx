/**
 * The payouts a person should look at, as list items (lib/admin/list-payouts-needing-attention.ts): flagged ones with
 * how often their settlement failed, those whose outcome has been unknown for long ("the bank has not said yet;
 * money held": never failed on a timer), and the recent returns with the bank's reason. Each links to the payout's
 * timeline. Rendered inside the admin home's and the payouts page's "Needs attention" lists.
 */
import Link from "next/link";
import type { PayoutNeedingAttention } from "@/lib/admin/list-payouts-needing-attention";
import { formatMoney } from "@/lib/money";
import { StatusBadge } from "../components/status-badge";
import { payoutHref } from "./payout-href";
import { UtcTime } from "./utc-time";

/** Why a payout is listed, in words. */
function Why({ row }: { row: PayoutNeedingAttention }) {
  switch (row.why) {
    case "flagged":
      return (
        <span className="reason">
          settlement failed {row.settleFailures} times
          {row.settleLastError ? `: ${row.settleLastError}` : ""}
          {row.settleFlaggedAt ? (
            <>
              {" "}
              (flagged <UtcTime iso={row.settleFlaggedAt} />)
            </>
          ) : null}
        </span>
      );
    case "stuck":
      return (
        <span className="reason">
          the bank has not said yet; money held since <UtcTime iso={row.createdAt} />
        </span>
      );
    case "returned":
      return (
        <span className="reason">
          returned by the receiving bank and credited back
          {row.returnedAt ? (
            <>
              {" "}
              <UtcTime iso={row.returnedAt} />
            </>
          ) : null}
          {row.returnDetail ? `: ${returnReason(row.returnDetail)}` : ""}
        </span>
      );
  }
}

/** The bank's reason and return id out of the return's transition detail ("…: returned by the bank (reason, id)"). */
function returnReason(detail: string): string {
  const match = /returned by the bank \(([^)]*)\)/.exec(detail);
  return match?.[1] ?? detail;
}

export function PayoutAttentionRows({ rows }: { rows: PayoutNeedingAttention[] }) {
  return rows.map((row) => (
    <li key={`${row.userId}:${row.refId}`} data-ref={row.refId} data-why={row.why} data-type="payout">
      Payout{" "}
      <Link href={payoutHref(row)} className="mono clip-inline" title={row.refId}>
        {row.refId}
      </Link>{" "}
      <span className="clip-inline">{row.userEmail}</span> <strong>{formatMoney(row.amount, row.currency)}</strong>{" "}
      <StatusBadge status={row.status} extra={row.why} /> <Why row={row} />
    </li>
  ));
}
