import type { Metadata } from "next";
import { AddressCheckNotice } from "@/app/components/address-check-notice";
import { env } from "@/lib/env";
import { requireSessionUser } from "@/lib/auth/session-user";
import { formatMoney } from "@/lib/money";
import { firstPageOrThrow } from "@/lib/pagination/cursor";
import { OFFERED_PAYEES, NOTE_LENGTH_MAX, PAYEE_LENGTH_MAX } from "@/lib/payments/payees";
import { listTopups } from "@/lib/topups/list-topups";
import { getWallet } from "@/lib/wallet/get-wallet";
import { currentFormRefId } from "@/lib/web/current-form-ref-id";
import type { LiveState } from "@/lib/web/outcome-sentences";
import { isUnfinished } from "@/lib/web/status-words";
import { paymentAction, topupAction, transferAction } from "./actions";
import { LiveUpdates } from "./live-updates";
import { OperationForm } from "./operation-form";
import { HistorySection, type PageQuery } from "./history-section";
import { TOPUPS_PAGE_SIZE } from "./page-sizes";
import { PayoutsSection } from "./payouts-section";
import { RewardsSection } from "./rewards-section";
import { listRecentPayouts } from "@/lib/payouts/list-payouts";

export const metadata: Metadata = { title: "Wallet" };

/** How many recent withdrawals the page lists. */
const RECENT_PAYOUTS_SHOWN = 5;
export const dynamic = "force-dynamic";

/**
 * The amounts offered by the forms, in minor units (the wallet's currency): top-ups 10, 25, 50; payments 1, 5, 10;
 * transfers 5, 10, 20.
 */
const TOPUP_PRESETS_MINOR = [1000, 2500, 5000] as const;
const PAYMENT_PRESETS_MINOR = [100, 500, 1000] as const;
const TRANSFER_PRESETS_MINOR = [500, 1000, 2000] as const;

/** The pay form's payee field: the offered merchants and the bounds (docs/decisions/055). */
const PAYEES = {
  names: OFFERED_PAYEES.map((payee) => payee.name),
  payeeMax: PAYEE_LENGTH_MAX,
  noteMax: NOTE_LENGTH_MAX,
} as const;

/**
 * The send form's fields (contract section 15): an address of at most 254 characters (RFC 5321's longest usable path,
 * the bound of the API's `to`), and the pay form's note.
 */
const RECIPIENT = { addressMax: 254, noteMax: NOTE_LENGTH_MAX } as const;

/**
 * The wallet: the balance, the money forms (top up, pay, send) and the rewards first (reachable without scrolling past the history
 * on a phone), then the history of every movement with its filters (the page's query: `type`, `status`, `q`, `from`,
 * `to`). The newest top-ups are read, not shown, so the top-up form's answer follows its top-up live.
 */
export default async function WalletPage({ searchParams }: { searchParams: Promise<PageQuery> }) {
  const user = await requireSessionUser();
  const settings = env();
  const [wallet, topupsResult, recentPayouts, topupRef, orderRef, transferRef, query] = await Promise.all([
    getWallet(user.userId),
    listTopups(user.userId, { limit: TOPUPS_PAGE_SIZE }),
    listRecentPayouts(user.userId, RECENT_PAYOUTS_SHOWN),
    currentFormRefId(user.userId, "topup"),
    currentFormRefId(user.userId, "payment"),
    currentFormRefId(user.userId, "transfer"),
    searchParams,
  ]);
  const topups = firstPageOrThrow(topupsResult);
  // Unfinished top-ups or withdrawals: the page polls for them when the live feed is down.
  const following = topups.items.some((t) => isUnfinished(t.status)) || wallet.held !== undefined;
  // The newest top-ups' states: the top-up form's answer follows the one it started (refreshed by LiveUpdates).
  const liveTopups: Record<string, LiveState> = {};
  for (const t of topups.items) liveTopups[t.refId] = { status: t.status, failureReason: t.failureReason };

  return (
    <main className="wallet">
      {/* The heading below keeps its exact markup, written once in this file: the dev-server test edits it. */}
      <section className="card balance">
        <div className="balance-head">
          <h1>Wallet</h1>
          <LiveUpdates following={following} />
        </div>
        <p>
          <span className="balance-label">Balance</span>{" "}
          <strong data-testid="balance" data-balance-minor={wallet.balance}>
            {formatMoney(wallet.balance, wallet.currency)}
          </strong>
        </p>
        {wallet.held !== undefined && (
          <p data-testid="balance-held" data-held-minor={wallet.held}>
            <span className="balance-label">Held for withdrawals</span>{" "}
            <strong>{formatMoney(wallet.held, wallet.currency)}</strong>
          </p>
        )}
        {wallet.debt !== undefined && (
          <p role="status" data-testid="debt" data-debt-minor={wallet.debt}>
            You owe {formatMoney(wallet.debt, wallet.currency)}: a bank took back a disputed top-up after the money was
            spent. Your next top-ups repay it first; payments wait until it is repaid.
          </p>
        )}
      </section>

      <AddressCheckNotice userId={user.userId} email={user.email} />

      <div className="forms">
        <OperationForm
          kind="topup"
          title="Top up"
          refId={topupRef}
          presetsMinor={TOPUP_PRESETS_MINOR}
          currency={wallet.currency}
          maxAmountMinor={settings.MAX_AMOUNT_MINOR}
          submitLabel="Top up"
          action={topupAction}
          testId="topup-form"
          liveStates={liveTopups}
        />
        <OperationForm
          kind="payment"
          title="Pay"
          refId={orderRef}
          presetsMinor={PAYMENT_PRESETS_MINOR}
          currency={wallet.currency}
          maxAmountMinor={settings.MAX_AMOUNT_MINOR}
          submitLabel="Pay"
          action={paymentAction}
          testId="pay-form"
          payees={PAYEES}
        />
        <OperationForm
          kind="transfer"
          title="Send money"
          refId={transferRef}
          presetsMinor={TRANSFER_PRESETS_MINOR}
          currency={wallet.currency}
          maxAmountMinor={settings.MAX_AMOUNT_MINOR}
          submitLabel="Send"
          action={transferAction}
          testId="send-form"
          recipient={RECIPIENT}
        />
      </div>

      <PayoutsSection userId={user.userId} recent={recentPayouts} heldMinor={wallet.held ?? 0} />

      <RewardsSection userId={user.userId} />

      <HistorySection userId={user.userId} query={query} />
    </main>
  );
}
