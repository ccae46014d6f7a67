import { forbidden } from "next/navigation";
import Link from "next/link";
import { Suspense } from "react";
import { countTopupsByStatus } from "@/lib/admin/count-topups-by-status";
import { listWebhookAnomalies } from "@/lib/admin/list-webhook-anomalies";
import { STUCK_AGE_MS } from "@/lib/admin/stuck";
import { adminTopupsQuerySchema, parseQuery } from "@/lib/http/list-query";
import { formatMinor } from "@/lib/money";
import { firstPageOrThrow } from "@/lib/pagination/cursor";
import { listAdminTopupRows } from "./admin-topup-rows";
import { AdminTopupsTable } from "./admin-topups-table";
import { AuditReport } from "./audit-report";
import { shortTime } from "./short-time";
import { ReconcileNow } from "./reconcile-now";
import { currentAdmin } from "./require-admin";
import "./admin.css";

export const dynamic = "force-dynamic";

const STATUSES = ["initiated", "processing", "succeeded", "failed"] as const;

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
 * The admin page: top-up counts by status, the top-up list with filters (`?status=`, `?stuck=1`) and stuck rows
 * highlighted, webhook anomalies, "Reconcile now", and the invariant report. Admins only (others see a 403
 * message; visitors are sent to sign in). Every read goes through lib/admin, lib/audit and lib/reconciler.
 */
export default async function AdminPage({ searchParams }: { searchParams: Promise<SearchParams> }) {
  const admin = await currentAdmin();
  if (!admin) forbidden();

  // The filters only: a cursor in the address is ignored (the page starts at the newest row; "Show more" pages).
  const query = parseQuery(adminTopupsQuerySchema.omit({ cursor: true }), toSearchParams(await searchParams));
  const filters = query.ok ? { ...query.value, stuck: query.value.stuck ?? false } : { stuck: false };
  const [counts, topups, anomalies] = await Promise.all([
    countTopupsByStatus(),
    listAdminTopupRows({ status: filters.status, stuck: filters.stuck, limit: filters.limit }).then(firstPageOrThrow),
    listWebhookAnomalies(),
  ]);

  return (
    <main className="admin">
      <section className="card">
        <h1>Admin</h1>
        <dl className="counters" data-testid="status-counts">
          {STATUSES.map((status) => (
            <div key={status}>
              <dt>
                <Link href={`/admin?status=${status}`}>{status}</Link>
              </dt>
              <dd data-count={status}>{counts.byStatus[status]}</dd>
            </div>
          ))}
          <div className={counts.leaseExpired > 0 ? "stuck" : undefined}>
            <dt>
              <Link href="/admin?stuck=1">lease expired</Link>
            </dt>
            <dd data-count="lease-expired">{counts.leaseExpired}</dd>
          </div>
        </dl>
      </section>

      <ReconcileNow />

      <section className="card" aria-labelledby="topups-heading">
        <h2 id="topups-heading">Top-ups</h2>
        <form method="get" className="filters" aria-label="Filter top-ups">
          <label>
            Status
            <select name="status" defaultValue={filters.status ?? ""}>
              <option value="">any</option>
              {STATUSES.map((status) => (
                <option key={status} value={status}>
                  {status}
                </option>
              ))}
            </select>
          </label>
          <label className="inline">
            <input type="checkbox" name="stuck" value="1" defaultChecked={filters.stuck} /> stuck only
          </label>
          <button type="submit">Filter</button>
          <Link href="/admin">Clear</Link>
        </form>
        {!query.ok && <p role="alert">Ignored an invalid filter: {query.detail}</p>}
        <p className="muted">
          Stuck: unfinished with an expired lease, or unfinished for more than {STUCK_AGE_MS / 60_000} minutes.
        </p>
        <AdminTopupsTable
          first={topups}
          filters={{ status: filters.status, stuck: filters.stuck, limit: filters.limit }}
        />
      </section>

      <section className="card" aria-labelledby="anomalies-heading">
        <h2 id="anomalies-heading">Webhook anomalies</h2>
        {anomalies.length === 0 ? (
          <p>No webhook anomalies.</p>
        ) : (
          <table data-testid="webhook-anomalies">
            <thead>
              <tr>
                <th>Outcome</th>
                <th>Event</th>
                <th>Merchant reference</th>
                <th>Charge</th>
                <th>Amount</th>
                <th>Deliveries</th>
                <th>Last seen</th>
              </tr>
            </thead>
            <tbody>
              {anomalies.map((a) => (
                <tr key={a.eventId}>
                  <td>
                    {a.outcome}
                    {a.detail ? <span className="muted"> — {a.detail}</span> : null}
                  </td>
                  <td className="mono">
                    {a.eventId} ({a.type})
                  </td>
                  <td className="mono">{a.merchantRef ?? "—"}</td>
                  <td className="mono">{a.chargeId ?? "—"}</td>
                  <td>{a.amount === null ? "—" : `${formatMinor(a.amount)} ${a.currency ?? ""}`}</td>
                  <td>{a.deliveries}</td>
                  <td>
                    <time dateTime={a.lastSeenAt}>{shortTime(a.lastSeenAt)}</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
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
