import type { Metadata } from "next";
import { forbidden } from "next/navigation";
import Link from "next/link";
import { getTopupTimeline } from "@/lib/admin/get-topup-timeline";
import { isStuckTopup } from "@/lib/admin/stuck";
import { randomUUID } from "node:crypto";
import { env } from "@/lib/env";
import { formatMoney, moneyInputPattern } from "@/lib/money";
import { listTopupChargebacks } from "@/lib/chargebacks/list-topup-chargebacks";
import { listTopupRefunds } from "@/lib/refunds/list-topup-refunds";
import { StatusBadge } from "../../../../components/status-badge";
import { ChargeId } from "../../../charge-id";
import { currentAdmin } from "../../../require-admin";
import { At, decodeSegment, EntryStateFacts, stateName, Transitions } from "../../../timeline-parts";
import "../../../admin.css";
import { RefundForm } from "./refund-form";

export const metadata: Metadata = { title: "Top-up timeline" };
export const dynamic = "force-dynamic";

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
  const [refunds, chargebacks] = await Promise.all([
    listTopupRefunds(userId, refId),
    listTopupChargebacks(userId, refId),
  ]);
  const settings = env();

  return (
    <main className="admin">
      <p>
        <Link href="/admin">← Admin</Link>
      </p>
      <section className={`card${stuck ? " stuck" : ""}`} data-testid="timeline-topup" data-status={topup.status}>
        <h1>
          Top-up <span className="mono">{topup.refId}</span>
        </h1>
        <dl className="counters">
          <div>
            <dt>Status</dt>
            <dd>
              <StatusBadge
                status={topup.status}
                failureReason={topup.failureReason}
                extra={stuck ? "stuck" : undefined}
              />
            </dd>
          </div>
          <div>
            <dt>Amount</dt>
            <dd>{formatMoney(topup.amount, topup.currency)}</dd>
          </div>
          <div>
            <dt>Fencing token</dt>
            <dd>{topup.fencingToken}</dd>
          </div>
        </dl>
        <dl className="facts">
          <dt>User</dt>
          <dd data-testid="timeline-user">
            {topup.userEmail ?? "(account deleted)"}{" "}
            <Link href={`/admin?user=${encodeURIComponent(topup.userEmail ?? "")}`}>their top-ups</Link>
          </dd>
          <dt>Merchant reference</dt>
          <dd className="mono clip" title={merchantRef ?? undefined}>
            {merchantRef ?? "—"}
          </dd>
          <dt>Bank charge</dt>
          <dd>
            <ChargeId chargeId={topup.chargeId} none="none yet" />
          </dd>
          <EntryStateFacts row={topup} />
        </dl>
      </section>

      <section className="card" aria-labelledby="refunds-heading" data-testid="timeline-refunds">
        <h2 id="refunds-heading">Refunds</h2>
        {refunds.length === 0 ? (
          <p>No refunds.</p>
        ) : (
          <ul>
            {refunds.map((r) => (
              <li key={r.refundId} data-status={r.status}>
                {formatMoney(r.amount, r.currency)} — <StatusBadge status={r.status} failureReason={r.failureReason} />{" "}
                <span className="mono">{r.refundId}</span> <At iso={r.createdAt} />
              </li>
            ))}
          </ul>
        )}
        {topup.status === "succeeded" && (
          <RefundForm
            userId={userId}
            topupRefId={refId}
            refundId={`admin-${randomUUID()}`}
            currency={topup.currency}
            maxAmountMinor={settings.MAX_AMOUNT_MINOR}
            inputPattern={moneyInputPattern(topup.currency)}
            topupAmountMinor={topup.amount}
            refundableMinor={topup.refundableMinor}
            userLabel={topup.userEmail ?? "this user"}
          />
        )}
      </section>

      <section className="card" aria-labelledby="chargebacks-heading" data-testid="timeline-chargebacks">
        <h2 id="chargebacks-heading">Chargebacks</h2>
        {chargebacks.length === 0 ? (
          <p>No dispute of this charge was lost.</p>
        ) : (
          <ul>
            {chargebacks.map((c) => (
              <li key={c.id} data-type={c.type} data-status={c.status}>
                {c.type === "chargeback" ? "Dispute lost: debited" : "Dispute reversed: credited back"}{" "}
                {formatMoney(c.amountMinor, c.currency)} — <StatusBadge status={c.status} />{" "}
                <span className="mono">{c.refId}</span> <At iso={c.createdAt.toISOString()} />
              </li>
            ))}
          </ul>
        )}
      </section>

      <section className="card" aria-labelledby="transitions-heading">
        <h2 id="transitions-heading">Transitions</h2>
        <Transitions transitions={transitions} testId="transitions" />
      </section>

      <section className="card" aria-labelledby="bank-heading">
        <h2 id="bank-heading">Bank</h2>
        {bank.kind === "charge" && (
          <p data-testid="bank-charge">
            Charge <code>{bank.charge.id}</code> is <strong>{bank.charge.status}</strong> for{" "}
            {formatMoney(bank.charge.amount, bank.charge.currency)}, created <At iso={bank.charge.createdAt} />.
          </p>
        )}
        {bank.kind === "no_charge" && (
          <p data-testid="bank-charge">The bank has no charge for this merchant reference.</p>
        )}
        {bank.kind === "unreachable" && <p role="alert">The bank could not be asked ({bank.reason}).</p>}
        {adjustment && (
          <p data-testid="adjustment">
            The charge succeeded after this top-up failed: adjustment entry <code>{adjustment.entryId}</code> credited{" "}
            {formatMoney(adjustment.amount, adjustment.currency)} for charge <code>{adjustment.chargeId}</code> (
            {stateName(adjustment.status)}, <At iso={adjustment.createdAt} />
            ). The top-up itself stays failed.
          </p>
        )}
      </section>

      <section className="card" aria-labelledby="webhooks-heading">
        <h2 id="webhooks-heading">Webhook deliveries</h2>
        {webhooks.length === 0 ? (
          <p>No webhook received for this merchant reference.</p>
        ) : (
          <table data-testid="webhooks" className="cards admin-table webhooks-table">
            <thead>
              <tr>
                <th scope="col" className="col-event">
                  Event
                </th>
                <th scope="col" className="col-type">
                  Type
                </th>
                <th scope="col" className="col-charge">
                  Charge
                </th>
                <th scope="col" className="num col-amount">
                  Amount
                </th>
                <th scope="col" className="col-outcome">
                  Outcome
                </th>
                <th scope="col" className="num col-deliveries">
                  Deliveries
                </th>
                <th scope="col" className="col-seen">
                  First and last seen
                </th>
              </tr>
            </thead>
            <tbody>
              {webhooks.map((w) => (
                <tr key={w.eventId}>
                  <td data-label="Event" className="clip">
                    <code title={w.eventId}>{w.eventId}</code>
                  </td>
                  <td data-label="Type">{w.type}</td>
                  <td data-label="Charge" className="clip">
                    <code className="charge-id" title={w.chargeId ?? undefined}>
                      {w.chargeId ?? "—"}
                    </code>
                  </td>
                  <td data-label="Amount" className="num nowrap">
                    {w.amount === null || w.currency === null ? "—" : formatMoney(w.amount, w.currency)}
                  </td>
                  <td data-label="Outcome">{w.outcome.replaceAll("_", " ")}</td>
                  <td data-label="Deliveries" className="num">
                    {w.deliveries}
                  </td>
                  <td data-label="First and last seen">
                    {/* One element, so the phone's card keeps both times in its value column (a bare "/" between
                        two elements became a row of its own there). */}
                    <span className="seen">
                      <span>
                        first <At iso={w.firstSeenAt} />
                      </span>
                      <span>
                        last <At iso={w.lastSeenAt} />
                      </span>
                    </span>
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
          <details>
            <summary>
              The first answer, HTTP {response.status}, exactly as stored and replayed (open to read it)
            </summary>
            <pre className="response">{response.body}</pre>
          </details>
        ) : (
          <p>None stored yet (the request has not answered, or died before answering).</p>
        )}
      </section>
    </main>
  );
}
