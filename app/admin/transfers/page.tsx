import type { Metadata } from "next";
import { forbidden } from "next/navigation";
import { ADMIN_TRANSFERS_LISTED_MAX, listAdminTransfers } from "@/lib/admin/list-admin-transfers";
import { formatMoney } from "@/lib/money";
import { STATUS_WORDS } from "@/lib/web/status-words";
import { AdminNav } from "../admin-nav";
import { currentAdmin } from "../require-admin";
import { UtcTime } from "../utc-time";
import { ReverseForm } from "./reverse-form";
import "../admin.css";

export const metadata: Metadata = { title: "Transfers" };
export const dynamic = "force-dynamic";

/**
 * Transfers between users for admins (contract section 15.1; docs/decisions/063): the newest ones, each with its
 * sender, recipient, amount and state; a succeeded one not yet reversed has a "Reverse" form that asks for the reason.
 * Admins only (others see a 403 message; visitors are sent to sign in). Every read goes through lib/admin.
 */
export default async function AdminTransfersPage() {
  const admin = await currentAdmin();
  if (!admin) forbidden();
  const transfers = await listAdminTransfers();
  return (
    <main className="admin">
      <AdminNav current="transfers" />
      <h1>Transfers</h1>
      <section className="card" aria-labelledby="transfers-heading">
        <h2 id="transfers-heading">Newest transfers</h2>
        <p className="muted">
          The newest {ADMIN_TRANSFERS_LISTED_MAX}, every time in UTC. A transfer is final; reversing one is a new pair
          of entries: the whole amount goes back to the sender and is taken from the recipient, as debt where their
          balance no longer covers it. Each transfer is reversed at most once.
        </p>
        {transfers.length === 0 ? (
          <p>No transfer yet.</p>
        ) : (
          <div className="scroll-box">
            <table data-testid="admin-transfers" className="cards admin-table">
              <thead>
                <tr>
                  <th scope="col">Sent</th>
                  <th scope="col">From</th>
                  <th scope="col">To</th>
                  <th scope="col" className="num">
                    Amount
                  </th>
                  <th scope="col">State</th>
                  <th scope="col">Reversal</th>
                </tr>
              </thead>
              <tbody>
                {transfers.map((t) => (
                  <tr key={`${t.senderId}/${t.refId}`} data-ref={t.refId}>
                    <td data-label="Sent">
                      <UtcTime iso={t.createdAt.toISOString()} />
                    </td>
                    <td data-label="From">{t.senderEmail}</td>
                    <td data-label="To">
                      {t.to}
                      {t.note ? <span className="reason">{t.note}</span> : null}
                    </td>
                    <td data-label="Amount" className="num">
                      {formatMoney(t.amountMinor, t.currency)}
                    </td>
                    <td data-label="State">
                      {STATUS_WORDS[t.status].label}
                      {t.failureReason ? <span className="reason">{t.failureReason.replaceAll("_", " ")}</span> : null}
                    </td>
                    <td data-label="Reversal">
                      {t.reversal ? (
                        <>
                          Reversed <UtcTime iso={t.reversal.createdAt.toISOString()} />
                          <span className="reason">{t.reversal.reason}</span>
                        </>
                      ) : t.status === "succeeded" ? (
                        <ReverseForm
                          userId={t.senderId}
                          refId={t.refId}
                          amountMinor={t.amountMinor}
                          currency={t.currency}
                        />
                      ) : (
                        "Nothing to reverse"
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </main>
  );
}
