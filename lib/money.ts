/**
 * Money for people and for the API's text. Amounts are integers in minor units everywhere (contract section 1);
 * these functions turn them into text and back, exactly (no floating point on the way).
 */

/**
 * Formats integer minor units as a major-unit string with two decimals ("2500" → "25.00", "-5" → "-0.05"), for
 * problem details and logs (the API's text). Pages use {@link formatMoney}, which follows the currency.
 */
export function formatMinor(amountMinor: number): string {
  const sign = amountMinor < 0 ? "-" : "";
  const abs = Math.abs(amountMinor);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

/**
 * The pages' locale. The pages are written in English, so numbers and dates follow one English locale on the server
 * and in the browser alike (a server render and its hydration must print the same text).
 */
export const PAGE_LOCALE = "en-US";

const moneyFormatters = new Map<string, Intl.NumberFormat>();

/** One currency formatter per currency code (building one costs far more than using it). */
function moneyFormatter(currency: string, signDisplay: "auto" | "always"): Intl.NumberFormat {
  const key = `${currency}:${signDisplay}`;
  let formatter = moneyFormatters.get(key);
  if (!formatter) {
    formatter = new Intl.NumberFormat(PAGE_LOCALE, { style: "currency", currency, signDisplay });
    moneyFormatters.set(key, formatter);
  }
  return formatter;
}

/**
 * How many decimals the currency's minor unit has, as ISO 4217 and Intl know it: 2 for USD and EUR, 0 for JPY,
 * 3 for KWD. Throws RangeError for a code that is not a currency.
 */
export function currencyDecimals(currency: string): number {
  return moneyFormatter(currency, "auto").resolvedOptions().maximumFractionDigits ?? 2;
}

/** Minor units as an exact decimal string in major units ("-2505", 2 decimals → "-25.05"). */
function majorDecimalText(amountMinor: number | bigint, decimals: number): string {
  if (typeof amountMinor === "number" && !Number.isSafeInteger(amountMinor))
    throw new RangeError(`amount ${amountMinor} is not a safe integer`);
  const text = BigInt(amountMinor).toString();
  const sign = text.startsWith("-") ? "-" : "";
  const digits = (sign ? text.slice(1) : text).padStart(decimals + 1, "0");
  if (decimals === 0) return `${sign}${digits}`;
  return `${sign}${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
}

/**
 * Formats integer minor units for people with `Intl.NumberFormat` in the wallet's currency: 2500 USD → "$25.00",
 * 5 USD → "$0.05", 1234567 USD → "$12,345.67", 500 JPY → "¥500". `sign: "always"` writes "+$25.00" and "−$25.00"
 * (a statement's credits and debits). Exact for every safe integer: the decimal text is built from the integer
 * and handed to Intl as a string, so no amount is rounded through a binary fraction; a bigint (a sum of the books
 * past 2^53) is exact too. A code that is not three
 * letters (an unusable bank event's, shown to admins) is written after the plain amount ("25.00 ??"). Throws
 * RangeError for an amount that is not a safe integer.
 */
export function formatMoney(
  amountMinor: number | bigint,
  currency: string,
  options: { sign?: "auto" | "always" } = {},
): string {
  if (!/^[A-Za-z]{3}$/.test(currency)) return `${majorDecimalText(amountMinor, 2)} ${currency}`;
  const signDisplay = options.sign ?? "auto";
  const text = majorDecimalText(amountMinor, currencyDecimals(currency));
  // Intl.NumberFormat formats a decimal string exactly (ECMA-402 2023, Intl.NumberFormat v3); the DOM typings
  // of TypeScript 5.9 still declare numbers only.
  return moneyFormatter(currency, signDisplay).format(text as unknown as number);
}

/**
 * The pattern of an amount typed in major units of `currency`, without anchors: "25", "25.5", "25.50", "1,250.00"
 * (2 decimals); "500", "1,500" (0 decimals). At most 13 integer digits: the contract's amounts stay far below 2^53.
 * The money forms give it to the input's `pattern` attribute, so the browser enforces what the hint says, and
 * {@link parseMoneyInput} applies the same one on the server.
 */
export function moneyInputPattern(currency: string): string {
  const decimals = currencyDecimals(currency);
  const fraction = decimals > 0 ? `(?:\\.[0-9]{1,${decimals}})?` : "";
  return `(?:0|[1-9][0-9]{0,12}|[1-9][0-9]{0,2}(?:,[0-9]{3}){1,4})${fraction}`;
}

/**
 * Parses an amount a person typed in major units of `currency` (see {@link moneyInputPattern}; surrounding spaces
 * are ignored) into integer minor units, exactly. Returns null for anything else: empty, zero, negative, more
 * decimals than the currency has, letters, exponents, too many digits. The caller still checks MAX_AMOUNT_MINOR.
 */
export function parseMoneyInput(text: string, currency: string): number | null {
  const trimmed = text.trim();
  if (!new RegExp(`^${moneyInputPattern(currency)}$`).test(trimmed)) return null;
  const decimals = currencyDecimals(currency);
  const [whole = "", fraction = ""] = trimmed.replaceAll(",", "").split(".");
  const minor = Number(whole) * 10 ** decimals + Number(fraction.padEnd(decimals, "0") || "0");
  return minor > 0 && Number.isSafeInteger(minor) ? minor : null;
}
