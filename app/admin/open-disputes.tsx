import { listOpenDisputes } from "@/lib/chargebacks/list-open-disputes";
import { env } from "@/lib/env";
import { formatMoney } from "@/lib/money";
import { UtcTime } from "./utc-time";
import { ChargeId } from "./charge-id";

/**
 * Disputes the bank has opened and not closed yet (contract section 12), read from the bank on the server. A dispute
 * moves no money until the bank closes it lost; the page streams this list inside a Suspense boundary.
 */
export async function OpenDisputes() {
  const settings = env();
  const result = await listOpenDisputes({ bankUrl: settings.BANK_URL, timeoutMs: settings.BANK_TIMEOUT_MS });
  if (result.kind === "bank_unavailable")
    return (
      <p role="alert" data-testid="open-disputes-error">
        The bank could not be asked for its disputes ({result.reason}). Reload the page to try again.
      </p>
    );
  if (result.disputes.length === 0) return <p data-testid="open-disputes">No open disputes.</p>;
  return (
    <>
      {/* Long merchant references: at desktop width the table scrolls inside its own box (a phone gets cards). */}
      <div className="scroll-box">
        <table data-testid="open-disputes" className="cards admin-table">
          <thead>
            <tr>
              <th scope="col">Dispute</th>
              <th scope="col">Merchant reference</th>
              <th scope="col">Charge</th>
              <th scope="col" className="num">
                Amount
              </th>
              <th scope="col">Opened</th>
            </tr>
          </thead>
          <tbody>
            {result.disputes.map((d) => (
              <tr key={d.id} data-dispute={d.id}>
                <td data-label="Dispute" className="clip">
                  <code>{d.id}</code>
                </td>
                <td data-label="Merchant reference" className="clip">
                  <code title={d.merchantRef}>{d.merchantRef}</code>
                </td>
                <td data-label="Charge" className="nowrap">
                  <ChargeId chargeId={d.chargeId} none="—" />
                </td>
                <td data-label="Amount" className="num nowrap">
                  {formatMoney(d.amount, d.currency)}
                </td>
                <td data-label="Opened" className="nowrap">
                  <UtcTime iso={d.openedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {result.truncated && <p className="muted">Only the first pages of the bank's list are shown.</p>}
    </>
  );
}
