import { formatMinor } from "../money";
import { csvRecord } from "./csv-cells";
import { type PostingPosition, type PostingsRead, readStatementPostings } from "./read-statement-postings";
import type { StatementPosting, StatementRange } from "./statement-posting";

/**
 * Lines read per keyset page of the export: about 100 KB of CSV, so memory stays bounded whatever the range holds,
 * and a year of a busy wallet (a few thousand postings) is a handful of indexed reads. No connection is held between
 * pages: a slow reader holds nothing of the database.
 */
const CSV_PAGE_LINES = 500;

/** The header row: the statement's columns, in this order. */
const CSV_COLUMNS = [
  "Posted at (UTC)",
  "Reference",
  "Description",
  "Counterparty",
  "Payee",
  "Note",
  "Amount",
  "Balance after",
  "Currency",
] as const;

/** The UTF-8 byte order mark: spreadsheets read the file as UTF-8 (payees and notes in any script) only with it. */
const UTF8_BOM = "\uFEFF";

function recordOf(line: StatementPosting): string {
  return csvRecord([
    line.postedAt,
    line.reference,
    line.description,
    line.counterparty,
    line.payee ?? "",
    line.note ?? "",
    { decimal: formatMinor(line.amount) },
    { decimal: formatMinor(line.balanceAfter) },
    line.currency,
  ]);
}

/** A statement export: its file name and its bytes, streamed. */
export interface StatementCsv {
  /** `statement-<from>-to-<to>.csv`: only digits, dashes and letters, safe in a Content-Disposition. */
  readonly filename: string;
  readonly body: ReadableStream<Uint8Array>;
}

/**
 * The caller's statement for `range` (UTC days `YYYY-MM-DD`, both included, at most STATEMENT_DAYS_MAX days, already
 * validated: `statementCsvQuerySchema`) as CSV (contract section 13.4): a UTF-8 byte order mark, a header row, then
 * one record per posting to the wallet account, oldest first, with the columns of `GET /api/v1/statement`'s lines
 * (amounts in major units, `-12.50`). Text cells are quoted and neutralised against formulas (./csv-cells.ts: RFC
 * 4180 and OWASP's CSV Injection).
 *
 * Streamed, never built in memory: each pull reads the next keyset page of CSV_PAGE_LINES postings (docs/decisions/
 * 020), so postings booked while it streams are read at the end, none skipped or repeated. The first page is read
 * before this returns, so a database that cannot answer throws here (a 500 problem) rather than cutting a file; a
 * failure of a later page errors the stream, which aborts the response (a client sees a broken download, never a
 * file that looks complete). Throws database errors.
 */
export async function streamStatementCsv(userId: string, range: StatementRange): Promise<StatementCsv> {
  const encoder = new TextEncoder();
  let page: PostingsRead | null = await readStatementPostings(userId, range, null, CSV_PAGE_LINES);
  let first = true;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (page === null) {
        controller.close();
        return;
      }
      const head = first ? UTF8_BOM + csvRecord(CSV_COLUMNS) : "";
      first = false;
      controller.enqueue(encoder.encode(head + page.lines.map(recordOf).join("")));
      const last: PostingPosition | undefined = page.positions[page.positions.length - 1];
      page =
        page.lines.length < CSV_PAGE_LINES || last === undefined
          ? null
          : await readStatementPostings(userId, range, last, CSV_PAGE_LINES);
    },
  });
  return { filename: `statement-${range.from}-to-${range.to}.csv`, body };
}
