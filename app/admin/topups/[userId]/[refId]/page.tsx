import { forbidden } from "next/navigation";
import Link from "next/link";
import { getTopupTimeline } from "@/lib/admin/get-topup-timeline";
import { isStuckTopup } from "@/lib/admin/stuck";
import { formatMinor } from "@/lib/money";
import { describeFailure } from "@/lib/web/failure-reasons";
import { currentAdmin } from "../../../require-admin";
import "../../../admin.css";

export const dynamic = "force-dynamic";

/** Decodes a path segment once; a malformed escape is kept as it is (it then matches no row: "not found"). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function shortTime(iso: string | null): string {
  return iso ? `${iso.replace("T", " ").slice(0, 23)} UTC` : "—";
}

/**
 * One top-up's timeline for admins: the row, its audit transitions (who moved it, with which fencing attempt,
 * and every lease take-over), the webhook deliveries recorded for its merchant reference, the bank's charge, and
 * the stored first response. Admins only.
 */
export default async function TopupTimelinePage({ params }: { params: Promise<{ userId: string; refId: string }> }) {
  const admin = await currentAdmin();
  if (!admin) forbidden();
  const segments = await params;
  const userId = decodeSegment(segments.userId);
  const refId = decodeSegment(segments.refId);
  const timeline = await getTopupTimeline(userId, refId);
  if (!timeline) {
    return (
      <main className="admin">
        <section className="card">
          <h1>Top-up not found</h1>
          <p>
            No top-up <code>{refId}</code> for user <code>{userId}</code>. <Link href="/admin">Back to admin</Link>
          </p>
        </section>
      </main>
    );
  }
  const { topup, transitions, webhooks, bank, response, merchantRef, adjustment } = timeline;
  const stuck = isStuckTopup(topup);

  return (
    <main className="admin">
      <p>
        <Link href="/admin">← Admin</Link>
      </p>
      <section className={`card${stuck ? " stuck" : ""}`} data-testid="timeline-topup" data-status={topup.status}>
        <h1>Top-up {topup.refId}</h1>
        <dl className="counters">
          <div>
            <dt>status</dt>
            <dd className={`status ${topup.status}`}>
              {topup.status}
              {stuck ? " (stuck)" : ""}
            </dd>
          </div>
          <div>
            <dt>amount</dt>
            <dd>
              {formatMinor(topup.amount)} {topup.currency}
            </dd>
          </div>
          <div>
            <dt>attempt</dt>
            <dd>{topup.attempt}</dd>
          </div>
        </dl>
        <ul>
          <li>
            User <code>{topup.userId}</code>
          </li>
          <li>
            Merchant reference <code>{merchantRef ?? "—"}</code>
          </li>
          <li>
            Bank charge id <code data-testid="charge-id">{topup.chargeId ?? "—"}</code>
          </li>
          <li>
            Lease{" "}
            {topup.leaseOwner ? (
              <>
                {topup.leaseOwner} until {shortTime(topup.leaseExpiresAt)}
              </>
            ) : (
              "none (finished)"
            )}
          </li>
          {topup.failureReason && (
            <li>
              Failure: {describeFailure(topup.failureReason)} (<code>{topup.failureReason}</code>)
            </li>
          )}
          <li>
            Created {shortTime(topup.createdAt)}, updated {shortTime(topup.updatedAt)}
          </li>
        </ul>
      </section>

      <section className="card" aria-labelledby="transitions-heading">
        <h2 id="transitions-heading">Transitions</h2>
        <ol className="timeline" data-testid="transitions">
          {transitions.map((t, index) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: a list rendered once from one response, never reordered
            <li key={index} data-actor={t.actor} data-to={t.to}>
              <time dateTime={t.at}>{shortTime(t.at)}</time> —{" "}
              {t.from === t.to ? (
                <>lease taken over ({t.to})</>
              ) : (
                <>
                  {t.from ?? "∅"} → {t.to}
                </>
              )}{" "}
              by <strong>{t.actor}</strong> (attempt {t.attempt}){t.detail ? `: ${t.detail}` : ""}
            </li>
          ))}
        </ol>
      </section>

      <section className="card" aria-labelledby="bank-heading">
        <h2 id="bank-heading">Bank</h2>
        {bank.kind === "charge" && (
          <p data-testid="bank-charge">
            Charge <code>{bank.charge.id}</code> is <strong>{bank.charge.status}</strong> for{" "}
            {formatMinor(bank.charge.amount)} {bank.charge.currency}, created {shortTime(bank.charge.createdAt)}.
          </p>
        )}
        {bank.kind === "no_charge" && (
          <p data-testid="bank-charge">The bank has no charge for this merchant reference.</p>
        )}
        {bank.kind === "unreachable" && <p role="alert">The bank could not be asked ({bank.reason}).</p>}
        {adjustment && (
          <p data-testid="adjustment">
            The charge succeeded after this top-up failed: adjustment entry <code>{adjustment.entryId}</code> credited{" "}
            {formatMinor(adjustment.amount)} {adjustment.currency} for charge <code>{adjustment.chargeId}</code> (
            {adjustment.status}, {shortTime(adjustment.createdAt)}). The top-up itself stays failed.
          </p>
        )}
      </section>

      <section className="card" aria-labelledby="webhooks-heading">
        <h2 id="webhooks-heading">Webhook deliveries</h2>
        {webhooks.length === 0 ? (
          <p>No webhook received for this merchant reference.</p>
        ) : (
          <table data-testid="webhooks">
            <thead>
              <tr>
                <th>Event</th>
                <th>Type</th>
                <th>Charge</th>
                <th>Amount</th>
                <th>Outcome</th>
                <th>Deliveries</th>
                <th>First / last seen</th>
              </tr>
            </thead>
            <tbody>
              {webhooks.map((w) => (
                <tr key={w.eventId}>
                  <td className="mono">{w.eventId}</td>
                  <td>{w.type}</td>
                  <td className="mono">{w.chargeId ?? "—"}</td>
                  <td>{w.amount === null ? "—" : `${formatMinor(w.amount)} ${w.currency ?? ""}`}</td>
                  <td>{w.outcome}</td>
                  <td>{w.deliveries}</td>
                  <td>
                    {shortTime(w.firstSeenAt)} / {shortTime(w.lastSeenAt)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section className="card" aria-labelledby="response-heading">
        <h2 id="response-heading">Stored first response</h2>
        {response ? (
          <>
            <p>HTTP {response.status}</p>
            <pre className="response">{response.body}</pre>
          </>
        ) : (
          <p>None stored yet (the request has not answered, or died before answering).</p>
        )}
      </section>
    </main>
  );
}
