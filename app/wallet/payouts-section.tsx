/**
 * The wallet page's withdrawals (contract section 14): the amount held for unfinished withdrawals, the "Withdraw to a
 * bank account" form, and the user's recent withdrawals with their state. Rendered on the server; the page's live
 * updates re-render it when the bank's word changes a withdrawal, so "Processing" turns into "Paid" or "Failed"
 * without a reload, and the balance and the held amount follow.
 */
import { env } from "@/lib/env";
import { formatMoney } from "@/lib/money";
import type { PayoutView } from "@/lib/ledger";
import { currentFormRefId } from "@/lib/web/current-form-ref-id";
import { type LiveState, payoutFailedSentence } from "@/lib/web/outcome-sentences";
import { payoutAction } from "./payout-actions";
import { PayoutForm } from "./payout-form";

/** A withdrawal's state in plain words; a failed one says whether the bank did not pay it or it was never made. */
function stateWords(payout: PayoutView): string {
  switch (payout.status) {
    case "succeeded":
      return "Paid";
    case "failed":
      return payoutFailedSentence("This withdrawal", payout.failureReason);
    default:
      return "Processing";
  }
}

const dateFormat = new Intl.DateTimeFormat("en-US", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" });

/** `recent`: the user's newest payouts; `heldMinor`: what the unfinished ones hold (the wallet's `held`, or 0). */
export async function PayoutsSection({
  userId,
  recent,
  heldMinor,
}: {
  userId: string;
  recent: readonly PayoutView[];
  heldMinor: number;
}) {
  const settings = env();
  const currency = settings.WALLET_CURRENCY;
  const refId = await currentFormRefId(userId, "payout");
  const liveStates: Record<string, LiveState> = {};
  for (const p of recent) liveStates[p.refId] = { status: p.status, failureReason: p.failureReason };
  return (
    <section className="card payouts" data-testid="payouts" aria-labelledby="payouts-title">
      <h2 id="payouts-title">Withdraw to a bank account</h2>
      <p data-testid="held" data-held-minor={heldMinor}>
        {heldMinor > 0
          ? `${formatMoney(heldMinor, currency)} held for withdrawals: not in your balance until the bank answers; given back if a withdrawal fails.`
          : "No money held for withdrawals."}
      </p>
      <PayoutForm
        refId={refId}
        currency={currency}
        maxAmountMinor={settings.MAX_AMOUNT_MINOR}
        action={payoutAction}
        liveStates={liveStates}
      />
      {recent.length > 0 && (
        <>
          <h3>Recent withdrawals</h3>
          <ul className="payout-list" data-testid="payout-list">
            {recent.map((p) => (
              <li key={p.refId} data-ref={p.refId} data-status={p.status}>
                <strong>{formatMoney(p.amount, p.currency)}</strong> to the account ending {p.destination.slice(-4)}
                {" · "}
                <span className={`payout-state ${p.status}`}>{stateWords(p)}</span>
                {" · "}
                <time dateTime={p.createdAt}>{dateFormat.format(new Date(p.createdAt))} UTC</time>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
