/**
 * CSV text (RFC 4180) for the statement's export, safe to open in a spreadsheet: every text cell is quoted, its
 * quotes doubled (RFC 4180 section 2, rules 5 to 7), so commas, quotes and line breaks stay inside it; and a text
 * cell that a spreadsheet would run as a formula (one starting with `=`, `+`, `-`, `@`, a tab or a carriage return:
 * OWASP's "CSV Injection") gets a leading `'`, which makes it text. Numbers we format ourselves are written bare, so
 * a debit's `-12.50` stays a number. Records end in CRLF.
 */

/** What OWASP lists as a formula's first character: `=`, `+`, `-`, `@`, tab (0x09), carriage return (0x0D). */
const FORMULA_LEAD = /^[=+\-@\t\r]/;

/** A cell: text from anywhere (neutralised and quoted), or a decimal number this code formatted (written bare). */
export type CsvCell = string | { readonly decimal: string };

/** A decimal number as {@link csvRecord} writes it bare: an optional minus, digits, optionally a fraction. */
const DECIMAL = /^-?[0-9]+(?:\.[0-9]+)?$/;

/** `text` with a leading `'` when a spreadsheet would read it as a formula (OWASP), unchanged otherwise. */
export function neutraliseFormula(text: string): string {
  return FORMULA_LEAD.test(text) ? `'${text}` : text;
}

/** `text` as one quoted RFC 4180 field: in double quotes, each quote inside doubled. */
export function quoteField(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

/**
 * One CSV record of `cells`, comma-separated and ended by CRLF (RFC 4180 section 2). Throws TypeError for a
 * "decimal" that is not a plain decimal number (a bug: it would be written unquoted).
 */
export function csvRecord(cells: readonly CsvCell[]): string {
  const fields = cells.map((cell) => {
    if (typeof cell === "string") return quoteField(neutraliseFormula(cell));
    if (!DECIMAL.test(cell.decimal)) throw new TypeError(`csvRecord: not a decimal: ${cell.decimal}`);
    return cell.decimal;
  });
  return `${fields.join(",")}\r\n`;
}
