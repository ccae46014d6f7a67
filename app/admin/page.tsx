import type { Metadata } from "next";
import { forbidden } from "next/navigation";
import Link from "next/link";
import { Suspense } from "react";
import { countTopupsByStatus } from "@/lib/admin/count-topups-by-status";
import { getTopupHourlyStats } from "@/lib/admin/get-topup-hourly-stats";
import { listFlaggedTopups } from "@/lib/admin/list-flagged-topups";
import { listStuckTopups } from "@/lib/admin/list-stuck-topups";
import { listPayoutsNeedingAttention } from "@/lib/admin/list-payouts-needing-attention";
import { listRefundsNeedingAttention } from "@/lib/admin/list-refunds-needing-attention";
import { listWebhookAnomalies } from "@/lib/admin/list-webhook-anomalies";
import { STUCK_AGE_MS } from "@/lib/admin/stuck";
import { adminTopupsQuerySchema, parseQuery } from "@/lib/http/list-query";
import { readMailOverview } from "@/lib/mail/read-mail-overview";
import { formatMoney } from "@/lib/money";
import { firstPageOrThrow } from "@/lib/pagination/cursor";
import { STATUS_WORDS } from "@/lib/web/status-words";
import { UtcTime } from "./utc-time";
import { AdminNav } from "./admin-nav";
import { listAdminTopupRows } from "./admin-topup-rows";
import { ChargeId } from "./charge-id";
import { AdminTopupsTable } from "./admin-topups-table";
import { AuditReport } from "./audit-report";
import { MailCard } from "./mail-card";
import { NeedsAttention } from "./needs-attention";
import { OpenDisputes } from "./open-disputes";
import { ReconcileNow } from "./reconcile-now";
import { currentAdmin } from "./require-admin";
import { TopupCharts } from "./topup-charts";
import "./admin.css";

export const metadata: Metadata = { title: "Admin" };
export const dynamic = "force-dynamic";

const STATUSES = ["initiated", "processing", "succeeded", "failed"] as const;

/** Rows in "Needs attention": the oldest problems first would hide new ones, so the newest 10, with a link to all. */
const ATTENTION_ROWS_MAX = 10;

type SearchParams = Record<string, string | string[] | undefined>;

/** The query string as URLSearchParams (first value of repeated keys), for the API's own list-query parser. */
function toSearchParams(params: SearchParams): URLSearchParams {
  const result = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined && first !== "") result.set(key, first);
  }
  return result;
}

/**
 * The admin page: what needs attention first (stuck top-ups; flagged rows, refunds and payouts join them), top-up counts by state, the
 * two charts of the last 24 hours, the top-up list with filters (`?status=`, `?user=<email>`, `?stuck=1`), "Reconcile
 * now", webhook anomalies and the invariant report. Admins only (others see a 403 message; visitors are sent to sign
 * in), and the open disputes the bank reports (contract section 12). Every read goes through lib/admin, lib/audit,
 * lib/chargebacks and lib/reconciler.
 */
export default async function AdminPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const admin = await currentAdmin();
  if (!admin) forbidden();

  // The filters only: a cursor in the address is ignored (the page starts at the newest row; "Show more" pages).
  const query = parseQuery(adminTopupsQuerySchema.omit({ cursor: true }), toSearchParams(await searchParams));
  const filters = query.ok
    ? {
        status: query.value.status,
        stuck: query.value.stuck ?? false,
        userEmail: query.value.user,
        limit: query.value.limit,
      }
    : { stuck: false };
  const [counts, stats, flagged, attention, refunds, payouts, topups, anomalies, mail] = await Promise.all([
    countTopupsByStatus(),
    getTopupHourlyStats(),
    listFlaggedTopups(ATTENTION_ROWS_MAX),
    listStuckTopups({ limit: ATTENTION_ROWS_MAX }).then(firstPageOrThrow),
    listRefundsNeedingAttention(ATTENTION_ROWS_MAX),
    listPayoutsNeedingAttention(ATTENTION_ROWS_MAX),
    listAdminTopupRows(filters).then(firstPageOrThrow),
    listWebhookAnomalies(),
    readMailOverview(ATTENTION_ROWS_MAX),
  ]);

  return (
    <main className="admin">
      <AdminNav current="overview" />
      <section className="card admin-head">
        <h1>Admin</h1>
        <dl className="counters" data-testid="status-counts">
          {STATUSES.map((status) => (
            <div key={status}>
              <dt>
                <Link href={`/admin?status=${status}`}>{STATUS_WORDS[status].label}</Link>
              </dt>
              <dd data-count={status}>{counts.byStatus[status]}</dd>
            </div>
          ))}
          <div className={counts.leaseExpired > 0 ? "stuck" : undefined}>
            <dt>
              <Link href="/admin?stuck=1">Lease expired</Link>
            </dt>
            <dd data-count="lease-expired">{counts.leaseExpired}</dd>
          </div>
        </dl>
      </section>

      <NeedsAttention
        flagged={flagged}
        stuck={attention.items}
        refunds={refunds}
        payouts={payouts}
        more={attention.nextCursor !== null}
      />

      <TopupCharts stats={stats} />

      <section className="card" aria-labelledby="topups-heading">
        <h2 id="topups-heading">Top-ups</h2>
        <form method="get" className="filters" aria-label="Filter top-ups">
          <div className="field">
            <label htmlFor="filter-status">Status</label>
            <select id="filter-status" name="status" defaultValue={filters.status ?? ""}>
              <option value="">Any</option>
              {STATUSES.map((status) => (
                <option key={status} value={status}>
                  {STATUS_WORDS[status].label}
                </option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor="filter-user">User email</label>
            <input
              id="filter-user"
              name="user"
              type="email"
              autoComplete="off"
              maxLength={254}
              defaultValue={query.ok ? (query.value.user ?? "") : ""}
              placeholder="someone@example.com"
            />
          </div>
          <label className="checkbox">
            <input type="checkbox" name="stuck" value="1" defaultChecked={filters.stuck} /> Stuck only
          </label>
          <div className="filter-buttons">
            <button type="submit">Filter</button>
            <Link href="/admin">Clear</Link>
          </div>
        </form>
        {!query.ok && (
          <p role="alert" className="form-error">
            Some filters were not understood and were left out: use a state from the list and a full email address.
          </p>
        )}
        <p className="muted">
          Stuck: unfinished with an expired lease, or unfinished for more than {STUCK_AGE_MS / 60_000} minutes.
        </p>
        <AdminTopupsTable
          first={topups}
          filters={{ status: filters.status, stuck: filters.stuck, userEmail: filters.userEmail, limit: filters.limit }}
        />
      </section>

      <ReconcileNow />

      <MailCard overview={mail} />

      <section className="card" aria-labelledby="anomalies-heading">
        <h2 id="anomalies-heading">Webhook anomalies</h2>
        {anomalies.length === 0 ? (
          <p>No webhook anomalies.</p>
        ) : (
          // Seven columns of identifiers: at desktop width the table scrolls inside its own box (a phone gets cards).
          <div className="scroll-box">
            <table data-testid="webhook-anomalies" className="cards admin-table">
              <thead>
                <tr>
                  <th scope="col">Outcome</th>
                  <th scope="col">Event</th>
                  <th scope="col">Merchant reference</th>
                  <th scope="col">Charge</th>
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
                  <tr key={a.eventId}>
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
                    <td data-label="Charge" className="nowrap">
                      <ChargeId chargeId={a.chargeId} none="—" />
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
        )}
      </section>

      <section className="card" aria-labelledby="disputes-heading">
        <h2 id="disputes-heading">Open disputes</h2>
        <Suspense fallback={<p aria-busy="true">Asking the bank…</p>}>
          <OpenDisputes />
        </Suspense>
      </section>

      <section className="card" aria-labelledby="audit-heading">
        <h2 id="audit-heading">Invariants</h2>
        <Suspense fallback={<p aria-busy="true">Running the audit…</p>}>
          <AuditReport />
        </Suspense>
      </section>
    </main>
  );
}
