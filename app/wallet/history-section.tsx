/**
 * The wallet page's history card (docs/decisions/055): the filters (kind, status, a search of the reference, payee or
 * note, a range of UTC days) as a plain GET form, so they live in the page's address and work before JavaScript
 * loads, and the list of movements they keep. The filters are validated like `GET /api/v1/entries`'s query; filters
 * that query refuses are said in words and show no list.
 */
import { LEDGER_DIRECTION } from "@/lib/ledger";
import { entriesQuerySchema, parseQuery } from "@/lib/http/list-query";
import { firstPageOrThrow } from "@/lib/pagination/cursor";
import { listEntries, type StatementFilters } from "@/lib/wallet/list-entries";
import { STATUS_WORDS } from "@/lib/web/status-words";
import { HistoryList } from "./history-list";
import { KIND_WORDS } from "./movement-words";
import { STATEMENT_PAGE_SIZE } from "./page-sizes";
import { TimeZoneNote } from "../components/time-zone-note";

/** The page address's query, as Next.js hands it to a page. */
export type PageQuery = Readonly<Record<string, string | string[] | undefined>>;

/** The filters of `query` (the first value of each), validated, or why not. */
function readFilters(query: PageQuery): { ok: true; filters: StatementFilters } | { ok: false } {
  const params = new URLSearchParams();
  for (const name of ["type", "status", "q", "from", "to"]) {
    const value = query[name];
    const first = Array.isArray(value) ? value[0] : value;
    // An empty field of the form is no filter.
    if (first !== undefined && first !== "") params.set(name, first);
  }
  const parsed = parseQuery(entriesQuerySchema, params);
  if (!parsed.ok) return { ok: false };
  const { type, status, q, from, to } = parsed.value;
  return { ok: true, filters: { type, status, q, from, to } };
}

function firstOf(value: string | string[] | undefined): string {
  return (Array.isArray(value) ? value[0] : value) ?? "";
}

export async function HistorySection({ userId, query }: { userId: string; query: PageQuery }) {
  const read = readFilters(query);
  const filters = read.ok ? read.filters : {};
  const filtered = Object.values(filters).some((value) => value !== undefined);
  const first = read.ok
    ? firstPageOrThrow(await listEntries(userId, { ...filters, limit: STATEMENT_PAGE_SIZE }))
    : null;
  return (
    <section className="card" id="history" aria-labelledby="history-heading">
      <h2 id="history-heading">History</h2>
      <TimeZoneNote />
      <p>
        <a href="/wallet/statement" data-testid="statement-link">
          Statement with running balance, and CSV download
        </a>
      </p>
      <search>
        <form method="get" action="/wallet#history" className="history-filters" data-testid="history-filters">
          <label className="field">
            <span>Search</span>
            <input
              type="search"
              name="q"
              maxLength={128}
              defaultValue={firstOf(query.q)}
              placeholder="Reference, payee or note"
            />
          </label>
          <label className="field">
            <span>Kind</span>
            <select name="type" defaultValue={firstOf(query.type)}>
              <option value="">All kinds</option>
              {Object.entries(KIND_WORDS).map(([type, words]) => (
                <option key={type} value={type}>
                  {words}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Status</span>
            <select name="status" defaultValue={firstOf(query.status)}>
              <option value="">All statuses</option>
              {Object.entries(STATUS_WORDS).map(([status, words]) => (
                <option key={status} value={status}>
                  {words.label}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>From (UTC day)</span>
            <input type="date" name="from" defaultValue={firstOf(query.from)} />
          </label>
          <label className="field">
            <span>To (UTC day)</span>
            <input type="date" name="to" defaultValue={firstOf(query.to)} />
          </label>
          <p className="history-filter-actions">
            <button type="submit">Apply</button> {filtered && <a href="/wallet#history">Clear filters</a>}
          </p>
        </form>
      </search>
      {first === null ? (
        <p role="alert" data-testid="history-invalid">
          These filters cannot be used: a search of at most 128 characters, and days from an earlier one to a later one.{" "}
          <a href="/wallet#history">Show every movement</a>.
        </p>
      ) : (
        <HistoryList first={first} filters={filters} directions={LEDGER_DIRECTION} filtered={filtered} />
      )}
    </section>
  );
}
