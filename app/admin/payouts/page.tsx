import type { Metadata } from "next";
import { forbidden } from "next/navigation";
import Link from "next/link";
import { listAdminPayouts } from "@/lib/admin/list-admin-payouts";
import { listWebhookAnomalies } from "@/lib/admin/list-webhook-anomalies";
import { listPayoutsNeedingAttention, RETURNS_LISTED_DAYS } from "@/lib/admin/list-payouts-needing-attention";
import { STUCK_AGE_MS } from "@/lib/admin/stuck";
import { formatMoney } from "@/lib/money";
import { firstPageOrThrow } from "@/lib/pagination/cursor";
import { STATUS_WORDS } from "@/lib/web/status-words";
import { AdminNav } from "../admin-nav";
import { ChargeId } from "../charge-id";
import { PayoutAttentionRows } from "../payout-attention-rows";
import { currentAdmin } from "../require-admin";
import { UtcTime } from "../utc-time";
import { AdminPayoutsTable } from "./admin-payouts-table";
import { PAYOUT_STATUSES } from "./statuses";
import "../admin.css";

export const metadata: Metadata = { title: "Payouts" };
export const dynamic = "force-dynamic";

/** Rows of each kind in "Needs attention" (flagged, unknown for long, returned). */
const ATTENTION_ROWS_MAX = 20;

type SearchParams = Record<string, string | string[] | undefined>;

/** The `status` filter of the address when it names a state, else none (an unknown one is said on the page). */
function statusOf(params: SearchParams): { status?: (typeof PAYOUT_STATUSES)[number]; understood: boolean } {
  const raw = Array.isArray(params.status) ? params.status[0] : params.status;
  if (raw === undefined || raw === "") return { understood: true };
  const status = PAYOUT_STATUSES.find((s) => s === raw);
  return status ? { status, understood: true } : { understood: false };
}

/**
 * Withdrawals for admins (contract section 14; docs/decisions/060): first what needs attention (payouts flagged, those
 * the bank has not answered for long, with their money held, recent returns, and payout webhook anomalies), then
 * every payout, newest first, filtered by state (`?status=`), paged by "Show more". Admins only (others see a 403
 * message; visitors are sent to sign in). Every read goes through lib/admin.
 */
export default async function AdminPayoutsPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const admin = await currentAdmin();
  if (!admin) forbidden();
  const { status, understood } = statusOf(await searchParams);
  const [attention, anomalies, payouts] = await Promise.all([
    listPayoutsNeedingAttention(ATTENTION_ROWS_MAX),
    listWebhookAnomalies(ATTENTION_ROWS_MAX, { payoutsOnly: true }),
    listAdminPayouts({ status }).then(firstPageOrThrow),
  ]);
  const count = attention.length + anomalies.length;

  return (
    <main className="admin">
      <AdminNav current="payouts" />
      <h1>Payouts</h1>
      <section
        className={`card attention${count > 0 ? " alerting" : ""}`}
        aria-labelledby="payout-attention-heading"
        data-testid="payouts-attention"
      >
        <h2 id="payout-attention-heading">Needs attention</h2>
        {count === 0 ? (
          <p className="ok">No payout is flagged, waiting on the bank for long or returned.</p>
        ) : (
          <>
            {attention.length > 0 && (
              <ul className="attention-list">
                <PayoutAttentionRows rows={attention} />
              </ul>
            )}
            {anomalies.length > 0 && <PayoutAnomalies anomalies={anomalies} />}
          </>
        )}
        <p className="muted">
          Listed: payouts whose settlement kept failing, payouts the bank has not answered for more than{" "}
          {STUCK_AGE_MS / 60_000} minutes (their money stays held until the bank says; never given back on a timer),
          returns of the last {RETURNS_LISTED_DAYS} days, and payout events that could not be applied.
        </p>
      </section>

      <section className="card" aria-labelledby="payouts-heading">
        <h2 id="payouts-heading">All payouts</h2>
        <form method="get" className="filters" aria-label="Filter payouts">
          <div className="field">
            <label htmlFor="filter-status">Status</label>
            <select id="filter-status" name="status" defaultValue={status ?? ""}>
              <option value="">Any</option>
              {PAYOUT_STATUSES.map((s) => (
                <option key={s} value={s}>
                  {STATUS_WORDS[s].label}
                </option>
              ))}
            </select>
          </div>
          <div className="filter-buttons">
            <button type="submit">Filter</button>
            <Link href="/admin/payouts">Clear</Link>
          </div>
        </form>
        {!understood && (
          <p role="alert" className="form-error">
            The state in the address was not understood and was left out: use a state from the list.
          </p>
        )}
        <AdminPayoutsTable first={payouts} filters={{ status }} nowMs={Date.now()} stuckAgeMs={STUCK_AGE_MS} />
      </section>
    </main>
  );
}

/** Payout webhook events that moved nothing: what the app found, the event, its payout and its deliveries. */
function PayoutAnomalies({ anomalies }: { anomalies: Awaited<ReturnType<typeof listWebhookAnomalies>> }) {
  return (
    <>
      <h3>Payout events that could not be applied</h3>
      <div className="scroll-box">
        <table data-testid="payout-anomalies" className="cards admin-table">
          <thead>
            <tr>
              <th scope="col">Outcome</th>
              <th scope="col">Event</th>
              <th scope="col">Merchant reference</th>
              <th scope="col">Bank payout</th>
              <th scope="col" className="num">
                Amount
              </th>
              <th scope="col" className="num">
                Deliveries
              </th>
              <th scope="col">Last seen</th>
            </tr>
          </thead>
          <tbody>
            {anomalies.map((a) => (
              <tr key={a.eventId} data-event={a.eventId}>
                <td data-label="Outcome">
                  {a.outcome.replaceAll("_", " ")}
                  {a.detail ? <span className="reason">{a.detail}</span> : null}
                </td>
                <td data-label="Event" className="clip">
                  <code title={`${a.eventId} (${a.type})`}>{a.eventId}</code>
                </td>
                <td data-label="Merchant reference" className="clip">
                  <code title={a.merchantRef ?? undefined}>{a.merchantRef ?? "—"}</code>
                </td>
                <td data-label="Bank payout" className="nowrap">
                  <ChargeId chargeId={a.chargeId} none="—" what="payout id" />
                </td>
                <td data-label="Amount" className="num nowrap">
                  {a.amount === null || a.currency === null ? "—" : formatMoney(a.amount, a.currency)}
                </td>
                <td data-label="Deliveries" className="num">
                  {a.deliveries}
                </td>
                <td data-label="Last seen" className="nowrap">
                  <UtcTime iso={a.lastSeenAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
