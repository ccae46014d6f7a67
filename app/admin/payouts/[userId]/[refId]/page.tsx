import type { Metadata } from "next";
import { forbidden } from "next/navigation";
import Link from "next/link";
import { getPayoutTimeline, type TimelinePosting } from "@/lib/admin/get-payout-timeline";
import { STUCK_AGE_MS } from "@/lib/admin/stuck";
import { formatMoney } from "@/lib/money";
import { isUnfinished } from "@/lib/web/status-words";
import { StatusBadge } from "../../../../components/status-badge";
import { AdminNav } from "../../../admin-nav";
import { ChargeId } from "../../../charge-id";
import { currentAdmin } from "../../../require-admin";
import { At, decodeSegment, EntryStateFacts, stateName, Transitions } from "../../../timeline-parts";
import "../../../admin.css";

export const metadata: Metadata = { title: "Payout timeline" };
export const dynamic = "force-dynamic";

/** What each journal event of a payout means, in words. */
const POSTING_EVENTS: Record<string, string> = {
  reserve: "held: out of the wallet, into payouts in flight",
  settle: "paid: from payouts in flight to the bank",
  release: "given back: from payouts in flight to the wallet",
  move: "returned: from the bank back to the wallet",
};

function Postings({ postings, testId }: { postings: TimelinePosting[]; testId: string }) {
  if (postings.length === 0) return <p data-testid={testId}>Nothing posted.</p>;
  return (
    <ul data-testid={testId}>
      {postings.map((p) => (
        <li key={`${p.event}:${p.account}`} data-event={p.event} data-account={p.account}>
          <At iso={p.postedAt} /> — <strong>{p.event}</strong> ({POSTING_EVENTS[p.event] ?? p.event}):{" "}
          <span className="mono">{p.account.replaceAll("_", " ")}</span> {p.amountMinor > 0 ? "gains" : "gives"}{" "}
          {formatMoney(Math.abs(p.amountMinor), p.currency)}
        </li>
      ))}
    </ul>
  );
}

/**
 * One payout's timeline for admins (contract section 14): the row and its state (an unfinished one old enough is
 * said to be waiting on the bank, its money held), its audit transitions, what it posted to the books (the hold, then
 * the payment or the give-back), the webhook deliveries recorded for its merchant reference, its return when the
 * receiving bank sent it back, and the stored first response. Admins only; any user's payout.
 */
export default async function PayoutTimelinePage({ params }: { params: Promise<{ userId: string; refId: string }> }) {
  const admin = await currentAdmin();
  if (!admin) forbidden();
  const segments = await params;
  const userId = decodeSegment(segments.userId);
  const refId = decodeSegment(segments.refId);
  const timeline = await getPayoutTimeline(userId, refId);
  if (!timeline) {
    return (
      <main className="admin">
        <AdminNav current="payouts" />
        <section className="card">
          <h1>Payout not found</h1>
          <p>
            No payout <code>{refId}</code> for user <code>{userId}</code>.{" "}
            <Link href="/admin/payouts">Back to payouts</Link>
          </p>
        </section>
      </main>
    );
  }
  const { payout, transitions, postings, webhooks, response, merchantRef, returned } = timeline;
  const waiting = isUnfinished(payout.status) && Date.now() - Date.parse(payout.createdAt) > STUCK_AGE_MS;

  return (
    <main className="admin">
      <AdminNav current="payouts" />
      <section className={`card${waiting ? " stuck" : ""}`} data-testid="timeline-payout" data-status={payout.status}>
        <h1>
          Payout <span className="mono">{payout.refId}</span>
        </h1>
        <dl className="counters">
          <div>
            <dt>Status</dt>
            <dd>
              <StatusBadge
                status={payout.status}
                failureReason={payout.failureReason}
                extra={returned ? "returned" : waiting ? "stuck" : undefined}
              />
            </dd>
          </div>
          <div>
            <dt>Amount</dt>
            <dd>{formatMoney(payout.amount, payout.currency)}</dd>
          </div>
          <div>
            <dt>Fencing token</dt>
            <dd>{payout.fencingToken}</dd>
          </div>
        </dl>
        {waiting && (
          <p className="reason" data-testid="outcome-unknown">
            The bank has not said yet; the money is held until it does (never given back on a timer).
          </p>
        )}
        {payout.settleFlaggedAt && (
          <p className="reason" data-testid="flagged">
            Flagged <At iso={payout.settleFlaggedAt} />: settlement failed {payout.settleFailures} times
            {payout.settleLastError ? ` (${payout.settleLastError})` : ""}.
          </p>
        )}
        <dl className="facts">
          <dt>User</dt>
          <dd data-testid="timeline-user">{payout.userEmail || "(account deleted)"}</dd>
          <dt>Destination account</dt>
          <dd className="mono">{payout.destination}</dd>
          <dt>Merchant reference</dt>
          <dd className="mono clip" title={merchantRef}>
            {merchantRef}
          </dd>
          <dt>Bank payout</dt>
          <dd>
            <ChargeId chargeId={payout.payoutId} none="none yet" what="payout id" />
          </dd>
          <EntryStateFacts row={payout} />
        </dl>
      </section>

      <section className="card" aria-labelledby="transitions-heading">
        <h2 id="transitions-heading">Transitions</h2>
        <Transitions transitions={transitions} testId="transitions" />
      </section>

      <section className="card" aria-labelledby="postings-heading">
        <h2 id="postings-heading">Postings</h2>
        <Postings postings={postings} testId="postings" />
      </section>

      <section className="card" aria-labelledby="return-heading" data-testid="timeline-return">
        <h2 id="return-heading">Return</h2>
        {returned ? (
          <>
            <p>
              The receiving bank sent {formatMoney(returned.amount, returned.currency)} back (bank payout{" "}
              <code>{returned.payoutId ?? "—"}</code>); credited to the wallet once, <At iso={returned.createdAt} /> (
              {stateName(returned.status)}).
            </p>
            <Transitions transitions={returned.transitions} testId="return-transitions" />
            <Postings postings={returned.postings} testId="return-postings" />
          </>
        ) : (
          <p>Not returned.</p>
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
                  Bank payout
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
                <tr key={w.eventId} data-outcome={w.outcome}>
                  <td data-label="Event" className="clip">
                    <code title={w.eventId}>{w.eventId}</code>
                  </td>
                  <td data-label="Type">{w.type}</td>
                  <td data-label="Bank payout" className="clip">
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
