import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { LEDGER_DIRECTION } from "@/lib/ledger";
import { requireSessionUser } from "@/lib/auth/session-user";
import { getMovement } from "@/lib/wallet/get-movement";
import { STATUS_WORDS } from "@/lib/web/status-words";
import { LocalTime } from "../../../components/local-time";
import { StatusBadge } from "../../../components/status-badge";
import { MovementAmount } from "../../movement-amount";
import { describeMovement } from "../../movement-words";

export const metadata: Metadata = { title: "Movement" };
export const dynamic = "force-dynamic";

/** Who moved a row, in words (contract section 2's actors). */
const ACTOR_WORDS = {
  request: "your request",
  webhook: "the bank's notice",
  reconciler: "the wallet's own check with the bank",
  admin: "the wallet's staff",
} as const;

/**
 * One movement of the signed-in user's money, addressed by its readable reference (docs/decisions/055): the receipt
 * (what, payee, note, amount, status, the readable and the full reference, times in UTC and in the reader's zone,
 * each with its zone named) and the timeline of its states (its audit rows). Another user's movement, an unknown
 * reference and a refund refused before it moved anything are "not found".
 */
export default async function MovementPage({ params }: { params: Promise<{ reference: string }> }) {
  const user = await requireSessionUser();
  const { reference } = await params;
  // A readable reference is letters, digits and dashes only: anything still encoded is no reference (not found).
  const movement = await getMovement(user.userId, reference);
  if (!movement) notFound();
  const { line, steps } = movement;
  return (
    <main className="movement">
      <p>
        <Link href="/wallet#history">← Back to the wallet</Link>
      </p>
      <section className="card" aria-labelledby="receipt-heading" data-testid="receipt">
        <h1 id="receipt-heading">{describeMovement(line)}</h1>
        <dl className="receipt">
          <dt>Amount</dt>
          <dd data-testid="receipt-amount">
            <MovementAmount
              amountMinor={line.amount}
              currency={line.currency}
              direction={LEDGER_DIRECTION[line.type]}
              status={line.status}
            />
          </dd>
          <dt>Status</dt>
          <dd data-testid="receipt-status" data-status={line.status}>
            <StatusBadge status={line.status} failureReason={line.failureReason} />
          </dd>
          {line.type === "payment" && (
            <>
              <dt>Paid to</dt>
              <dd data-testid="receipt-payee">{line.payee ?? "Not named"}</dd>
              <dt>Note</dt>
              <dd data-testid="receipt-note">{line.note ?? "None"}</dd>
            </>
          )}
          {(line.type === "transfer" || line.type === "transfer_in") && (
            <>
              <dt>{line.type === "transfer" ? "Sent to" : "Received from"}</dt>
              <dd data-testid="receipt-party">{(line.type === "transfer" ? line.to : line.from) ?? "Not named"}</dd>
              <dt>Note</dt>
              <dd data-testid="receipt-note">{line.note ?? "None"}</dd>
            </>
          )}
          <dt>Reference</dt>
          <dd className="mono" data-testid="receipt-reference">
            {line.reference}
          </dd>
          <dt>Full reference</dt>
          <dd className="mono ref-cell" data-testid="receipt-full-reference">
            {line.refId}
          </dd>
          <dt>Made</dt>
          <dd>
            <LocalTime iso={line.createdAt} detail="seconds" zone />
          </dd>
          <dt>Last changed</dt>
          <dd>
            <LocalTime iso={line.updatedAt} detail="seconds" zone />
          </dd>
        </dl>
      </section>
      <section className="card" aria-labelledby="timeline-heading">
        <h2 id="timeline-heading">Timeline</h2>
        <ol className="timeline" data-testid="timeline">
          {steps.map((step) => (
            <li key={`${step.at}:${step.from}:${step.to}:${step.actor}`} data-to={step.to}>
              <LocalTime iso={step.at} detail="seconds" zone />:{" "}
              {step.from === null ? "recorded" : `${wordOf(step.from)} → ${wordOf(step.to)}`}
              {step.from === null ? ` as ${wordOf(step.to).toLowerCase()}` : ""}, by {ACTOR_WORDS[step.actor]}
            </li>
          ))}
        </ol>
      </section>
    </main>
  );
}

function wordOf(status: string): string {
  return STATUS_WORDS[status as keyof typeof STATUS_WORDS]?.label ?? status;
}
