/**
 * A movement's amount on the wallet page, in the wallet's currency (Intl.NumberFormat). A succeeded credit reads
 * "+$25.00" and a debit "−$5.00"; an unfinished one is muted ("not yet"); a failed one is struck through and says
 * that nothing moved, so a refused payment never looks like money that left the wallet.
 */
import type { EntryStatus } from "@/lib/ledger";
import { formatMoney } from "@/lib/money";

export function MovementAmount({
  amountMinor,
  currency,
  direction,
  status,
}: {
  amountMinor: number;
  currency: string;
  /** 1 for a credit, -1 for a debit. */
  direction: 1 | -1;
  status: EntryStatus;
}) {
  if (status === "failed") {
    return (
      <span className="amount void" data-moved="false">
        <s>{formatMoney(amountMinor, currency)}</s>{" "}
        <span className="why">{direction > 0 ? "not charged" : "not paid"}</span>
      </span>
    );
  }
  const text = formatMoney(direction * amountMinor, currency, { sign: "always" });
  if (status === "succeeded") {
    return (
      <span className={`amount ${direction > 0 ? "credit" : "debit"}`} data-moved="true">
        {text}
      </span>
    );
  }
  return (
    <span className="amount unfinished" data-moved="false">
      {text} <span className="why">not yet</span>
    </span>
  );
}
