import { pool } from "../db";
import { ENTRY_COLUMNS, type EntryStatus, type LedgerType, toLedgerEntry } from "../ledger";
import { boundedLimit, keysetAfter, pageOf, type PageResult } from "../pagination/cursor";
import { positionOf } from "../topups/list-topups";
import { parseReadableReference } from "./readable-reference";
import { CUSTOMER_MOVEMENT_SQL, type StatementLine, statementLine } from "./statement-line";

/**
 * The statement's filters (docs/decisions/055), already validated (lib/http/list-query.ts `entriesQuerySchema`):
 * the kind (ledger type) and the status; `q`, a search text (1..64 characters) matched against the readable
 * reference, the full reference, a payment's payee and its note, a transfer's other user and its note; `from` and
 * `to`, UTC days (`YYYY-MM-DD`, both
 * included).
 */
export interface StatementFilters {
  readonly type?: LedgerType;
  readonly status?: EntryStatus;
  readonly q?: string;
  readonly from?: string;
  readonly to?: string;
}

// Every condition binds user_id first, so the index (user_id, created_at DESC, id DESC) or, with a kind,
// (user_id, type, created_at DESC, id DESC) reads only the caller's rows, newest first, and stops at the page's end.
// The search compares with strpos on lowered text, never LIKE: a `%` or `_` the user types is only text. The
// readable reference is read back to its entry id in TypeScript ($7, $8), so finding one is an equality.
const LIST_ENTRIES_SQL = `
SELECT ${ENTRY_COLUMNS} FROM ledger_entries
 WHERE user_id = $1
   AND ${CUSTOMER_MOVEMENT_SQL}
   AND ($2::text IS NULL OR type = $2)
   AND ($3::text IS NULL OR status = $3)
   AND ($4::timestamptz IS NULL OR created_at >= $4)
   AND ($5::timestamptz IS NULL OR created_at < $5)
   AND ($6::text IS NULL
        OR (id = $7::bigint AND ($8::text IS NULL OR type = $8))
        OR strpos(lower(ref_id), lower($6)) > 0
        OR (type = 'payment' AND (strpos(lower(params->>'payee'), lower($6)) > 0
                                  OR strpos(lower(params->>'note'), lower($6)) > 0))
        OR (type = 'transfer' AND strpos(lower(params->>'to'), lower($6)) > 0)
        OR (type = 'transfer_in' AND strpos(lower(params->>'from'), lower($6)) > 0)
        OR (type IN ('transfer', 'transfer_in') AND strpos(lower(params->>'note'), lower($6)) > 0))
   AND ($9::timestamptz IS NULL OR (created_at, id) < ($9::timestamptz, $10::bigint))
 ORDER BY created_at DESC, id DESC
 LIMIT $11`;

const DAY_MS = 86_400_000;

/** The filters as the query's parameters $2..$8: times for the days, the readable reference read back. */
function filterParams(filters: StatementFilters): unknown[] {
  const reference = filters.q === undefined ? null : parseReadableReference(filters.q);
  return [
    filters.type ?? null,
    filters.status ?? null,
    filters.from === undefined ? null : new Date(`${filters.from}T00:00:00.000Z`),
    // `to` is included: rows before the start of the next UTC day.
    filters.to === undefined ? null : new Date(Date.parse(`${filters.to}T00:00:00.000Z`) + DAY_MS),
    filters.q ?? null,
    reference?.id ?? null,
    reference?.type ?? null,
  ];
}

/**
 * One page of the caller's statement (contract section 4: `GET /api/v1/entries?limit=&cursor=`; filters:
 * docs/decisions/055): every movement of the customer's money (top-ups, rewards, payments, refunds, adjustments,
 * disputes; not a refund refused at its claim, `CUSTOMER_MOVEMENT_SQL`) in every status, or those `filters` keep,
 * newest first by `(created_at, id)`, at most `limit` (1..100, default 50) after the position of `cursor`
 * (lib/pagination/cursor.ts), whose scope includes the filters.
 *
 * Returns the page and its `nextCursor` (null on the last page), or `ok: false` with a 400 detail for a malformed
 * or foreign cursor (another user's, another list's, or other filters'). Throws database errors.
 */
export async function listEntries(
  userId: string,
  options: { limit?: number; cursor?: string } & StatementFilters = {},
): Promise<PageResult<StatementLine>> {
  const limit = boundedLimit(options.limit);
  const { type, status, q, from, to } = options;
  const filters = [type, status, q, from, to];
  // Without filters the scope is what it always was, so a cursor handed out before the filters existed still pages.
  const scope = filters.every((value) => value === undefined)
    ? `user:${userId}`
    : `user:${userId}|${JSON.stringify(filters.map((value) => value ?? null))}`;
  const after = keysetAfter(options.cursor, "entries", scope);
  if (!after.ok) return after;
  const result = await pool().query(LIST_ENTRIES_SQL, [userId, ...filterParams(options), ...after.params, limit + 1]);
  const entries = result.rows.map(toLedgerEntry);
  return { ok: true, ...pageOf(entries, limit, "entries", scope, positionOf, statementLine) };
}
