import { requireSessionUser } from "@/lib/auth/session-user";
import { getWallet } from "@/lib/wallet/get-wallet";
import { listEntries } from "@/lib/wallet/list-entries";
import { listTopups } from "@/lib/topups/list-topups";
import { formatMinor } from "@/lib/money";
import { nextFormRefId } from "@/lib/web/form-refs";
import { describeFailure } from "@/lib/web/failure-reasons";
import { OperationForm } from "./operation-form";
import { LiveRefresh } from "./live-refresh";
import { RewardsSection } from "./rewards-section";
import { paymentAction, topupAction } from "./actions";

export const dynamic = "force-dynamic";

const STATUS_LABEL: Record<string, string> = {
  initiated: "pending",
  processing: "pending",
  succeeded: "succeeded",
  failed: "failed",
};

export default async function WalletPage() {
  const user = await requireSessionUser();
  const [wallet, topups, entries, topupRef, orderRef] = await Promise.all([
    getWallet(user.userId),
    listTopups(user.userId, { limit: 20 }),
    listEntries(user.userId, { limit: 50 }),
    nextFormRefId(user.userId, "topup"),
    nextFormRefId(user.userId, "payment"),
  ]);
  const pending = topups.some((t) => t.status === "initiated" || t.status === "processing");

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
        {topups.length === 0 ? (
          <p>No top-ups yet.</p>
        ) : (
          <table data-testid="topups">
            <thead>
              <tr>
                <th>Reference</th>
                <th>Amount</th>
                <th>Status</th>
                <th>Time</th>
              </tr>
            </thead>
            <tbody>
              {topups.map((t) => (
                <tr key={t.refId} data-ref={t.refId} data-status={t.status}>
                  <td>{t.refId}</td>
                  <td>
                    {formatMinor(t.amount)} {t.currency}
                  </td>
                  <td className={`status ${t.status}`}>
                    {STATUS_LABEL[t.status]}
                    {t.failureReason ? ` — ${describeFailure(t.failureReason)}` : ""}
                  </td>
                  <td>
                    <time dateTime={t.createdAt}>{t.createdAt.replace("T", " ").slice(0, 19)} UTC</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section className="card">
        <h2>Statement</h2>
        {entries.length === 0 ? (
          <p>No movements yet.</p>
        ) : (
          <table data-testid="statement">
            <thead>
              <tr>
                <th>Type</th>
                <th>Reference</th>
                <th>Amount</th>
                <th>Status</th>
                <th>Time</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={`${e.type}:${e.refId}`} data-status={e.status}>
                  <td>{e.type}</td>
                  <td>{e.refId}</td>
                  <td>
                    {e.type === "payment" ? "−" : "+"}
                    {formatMinor(e.amount)} {e.currency}
                  </td>
                  <td className={`status ${e.status}`}>
                    {STATUS_LABEL[e.status]}
                    {e.failureReason ? ` — ${describeFailure(e.failureReason)}` : ""}
                  </td>
                  <td>
                    <time dateTime={e.createdAt}>{e.createdAt.replace("T", " ").slice(0, 19)} UTC</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}
