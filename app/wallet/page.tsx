import { requireSessionUser } from "@/lib/auth/session-user";
import { getWallet } from "@/lib/wallet/get-wallet";
import { listEntries } from "@/lib/wallet/list-entries";
import { listTopups } from "@/lib/topups/list-topups";
import { formatMinor } from "@/lib/money";
import { firstPageOrThrow } from "@/lib/pagination/cursor";
import { currentFormRefId } from "@/lib/web/current-form-ref-id";
import { OperationForm } from "./operation-form";
import { LiveRefresh } from "./live-refresh";
import { RewardsSection } from "./rewards-section";
import { paymentAction, topupAction } from "./actions";
import { STATEMENT_PAGE_SIZE, TOPUPS_PAGE_SIZE } from "./page-sizes";
import { StatementTable } from "./statement-table";
import { TopupsTable } from "./topups-table";

export const dynamic = "force-dynamic";

export default async function WalletPage() {
  const user = await requireSessionUser();
  const [wallet, topupsResult, entriesResult, topupRef, orderRef] = await Promise.all([
    getWallet(user.userId),
    listTopups(user.userId, { limit: TOPUPS_PAGE_SIZE }),
    listEntries(user.userId, { limit: STATEMENT_PAGE_SIZE }),
    currentFormRefId(user.userId, "topup"),
    currentFormRefId(user.userId, "payment"),
  ]);
  const topups = firstPageOrThrow(topupsResult);
  const entries = firstPageOrThrow(entriesResult);
  const pending = topups.items.some((t) => t.status === "initiated" || t.status === "processing");

  return (
    <main>
      <LiveRefresh active={pending} />
      <section className="card balance">
        <h1>Wallet</h1>
        <p>
          Balance <strong data-testid="balance">{formatMinor(wallet.balance)}</strong> {wallet.currency}
        </p>
      </section>

      <div className="forms">
        <OperationForm
          title="Top up"
          refId={topupRef}
          presets={["10.00", "25.00", "50.00"]}
          submitLabel="Top up"
          action={topupAction}
          testId="topup-form"
        />
        <OperationForm
          title="Pay"
          refId={orderRef}
          presets={["1.00", "5.00", "10.00"]}
          submitLabel="Pay"
          action={paymentAction}
          testId="pay-form"
        />
      </div>

      <RewardsSection userId={user.userId} />

      <section className="card">
        <h2>Top-ups</h2>
        <TopupsTable first={topups} />
      </section>

      <section className="card">
        <h2>Statement</h2>
        <StatementTable first={entries} />
      </section>
    </main>
  );
}
