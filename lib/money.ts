/**
 * Formats integer minor units as a major-unit string with two decimals ("2500" → "25.00", "-5" → "-0.05").
 * Every currency of this wallet has two decimals (WALLET_CURRENCY is one ISO 4217 code such as USD or EUR).
 */
export function formatMinor(amountMinor: number): string {
  const sign = amountMinor < 0 ? "-" : "";
  const abs = Math.abs(amountMinor);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}
