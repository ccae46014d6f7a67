/**
 * Opaque page cursors for the lists of contract section 4 (`GET /api/v1/topups`, `/entries`, `/admin/topups`) and
 * the pages' "Show more".
 *
 * Every list is ordered newest first by `(created_at, id)`: `created_at` alone can tie (one millisecond holds many
 * rows), and the identity `id` is unique in the table, so the pair is a total order that never changes for a row.
 * A cursor names the last row a page showed; the next page is the rows strictly after it in that order
 * (`(created_at, id) < (cursor)` in keyset form). Rows inserted while a client pages are newer than any position it
 * already holds, so they land before the cursor and are neither repeated nor able to shift a row past it: nothing is
 * skipped or shown twice (an offset would do both).
 *
 * A cursor also says which list it belongs to: the list's name and a digest of its scope (the caller's user id
 * and the filters). A cursor from another list, another user or other filters is "foreign" and refused, like a
 * malformed one, with `400 invalid_request`; it could not leak anything (every query is scoped by the
 * authenticated caller anyway) but paging one list with another's position would silently skip rows.
 */
import { createHash } from "node:crypto";
import { z } from "zod";

/** The lists that page by cursor. The name is inside every cursor, so these strings are part of the format. */
export type ListName =
  | "topups"
  | "entries"
  | "admin-topups"
  | "admin-stuck-topups"
  | "statement"
  | "admin-account-postings"
  | "admin-payouts";

/** Contract section 4: `limit` defaults to 50 and is at most 100. */
export const LIST_LIMIT_DEFAULT = 50;
export const LIST_LIMIT_MAX = 100;

/**
 * Longest cursor accepted, in characters. An encoded cursor is about 110 characters (a list name, a 16-character
 * scope digest, a millisecond timestamp and a 64-bit id); 256 leaves room and bounds what is parsed.
 */
const CURSOR_LENGTH_MAX = 256;

/** base64url without padding (RFC 4648 section 5), 1..256 characters: the only text a cursor can be. */
export const CURSOR_PATTERN = new RegExp(`^[A-Za-z0-9_-]{1,${CURSOR_LENGTH_MAX}}$`);

/**
 * Where a page ended: the last row's `created_at` (milliseconds; the column is timestamptz(3)) and `id`. A list
 * ordered by a microsecond column (the statement's `posted_at`, docs/decisions/058) also keeps the microseconds past
 * that millisecond, `subMillisecondUs` (0..999), so its position is exact.
 */
export interface PagePosition {
  readonly createdAt: Date;
  readonly id: number;
  readonly subMillisecondUs?: number;
}

/** Version of the cursor format; a cursor of another version is refused as malformed. */
const CURSOR_VERSION = 1;

const payloadSchema = z.strictObject({
  v: z.literal(CURSOR_VERSION),
  l: z.string(),
  s: z.string(),
  t: z.int().min(0).max(8_640_000_000_000_000),
  i: z.int().min(1),
  u: z.int().min(0).max(999).optional(),
});

/** A 16-character digest (96 bits of SHA-256) of the list and its scope: equal only for the same list and scope. */
function scopeDigest(list: ListName, scope: string): string {
  return createHash("sha256").update(`${list}\n${scope}`).digest("base64url").slice(0, 16);
}

/**
 * Encodes the position after which the next page of `list` (for `scope`, e.g. `user:<id>|status:*`) starts.
 * Returns base64url text matching {@link CURSOR_PATTERN}.
 */
export function encodeCursor(list: ListName, scope: string, position: PagePosition): string {
  const payload = {
    v: CURSOR_VERSION,
    l: list,
    s: scopeDigest(list, scope),
    t: position.createdAt.getTime(),
    i: position.id,
    // Only the microsecond lists carry it, so every other cursor keeps the bytes it always had.
    ...(position.subMillisecondUs === undefined ? {} : { u: position.subMillisecondUs }),
  };
  return Buffer.from(JSON.stringify(payload), "utf8").toString("base64url");
}

export type DecodedCursor =
  | { readonly ok: true; readonly position: PagePosition }
  | { readonly ok: false; readonly detail: string };

/**
 * Decodes `cursor` for `list` and `scope`. Returns the position, or a 400 detail when the text is not a cursor
 * of this API (malformed, another version) or belongs to another list, user or set of filters (foreign).
 * Never throws.
 */
export function decodeCursor(cursor: string, list: ListName, scope: string): DecodedCursor {
  const malformed = { ok: false, detail: "cursor: not a cursor of this API (malformed)" } as const;
  if (!CURSOR_PATTERN.test(cursor)) return malformed;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    return malformed;
  }
  const payload = payloadSchema.safeParse(parsed);
  if (!payload.success) return malformed;
  const { l, s, t, i, u } = payload.data;
  if (l !== list || s !== scopeDigest(list, scope)) {
    return { ok: false, detail: "cursor: belongs to another list, user or set of filters (foreign)" };
  }
  const position = { createdAt: new Date(t), id: i };
  return { ok: true, position: u === undefined ? position : { ...position, subMillisecondUs: u } };
}

/** One page of a list: at most `limit` items, and the cursor of the next page (null on the last page). */
export interface Page<T> {
  readonly items: T[];
  readonly nextCursor: string | null;
}

/**
 * Cuts a page out of `rows`, which the caller read with `LIMIT limit + 1` in list order: the extra row, when
 * present, only proves that a next page exists. Returns the first `limit` rows mapped by `view` and the cursor
 * after the last of them, or null when there was no extra row.
 */
export function pageOf<R, T>(
  rows: R[],
  limit: number,
  list: ListName,
  scope: string,
  positionOf: (row: R) => PagePosition,
  view: (row: R) => T,
): Page<T> {
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  const nextCursor = rows.length > limit && last !== undefined ? encodeCursor(list, scope, positionOf(last)) : null;
  return { items: shown.map(view), nextCursor };
}

/** `limit` bounded to 1..{@link LIST_LIMIT_MAX}, {@link LIST_LIMIT_DEFAULT} when absent. */
export function boundedLimit(limit: number | undefined): number {
  return Math.min(Math.max(Math.trunc(limit ?? LIST_LIMIT_DEFAULT), 1), LIST_LIMIT_MAX);
}

/** A page, or why the cursor was refused (answered `400 invalid_request`). */
export type PageResult<T> = ({ readonly ok: true } & Page<T>) | { readonly ok: false; readonly detail: string };

/**
 * The keyset parameters of a page query: `[createdAt, id]` of the cursor's position (both null for the first page),
 * for SQL of the form `($n::timestamptz IS NULL OR (created_at, id) < ($n::timestamptz, $m::bigint))`.
 * Returns the parameters, or the decoding failure of `cursor`.
 */
export function keysetAfter(
  cursor: string | undefined,
  list: ListName,
  scope: string,
): { ok: true; params: [Date | null, number | null] } | { ok: false; detail: string } {
  if (cursor === undefined) return { ok: true, params: [null, null] };
  const decoded = decodeCursor(cursor, list, scope);
  if (!decoded.ok) return decoded;
  return { ok: true, params: [decoded.position.createdAt, decoded.position.id] };
}

/**
 * {@link keysetAfter} for a list ordered by a microsecond column: the cursor's time as ISO 8601 text with six
 * decimals (`2026-12-02T14:03:07.123456Z`, exact where a `Date` would cut it to the millisecond), for SQL of the form
 * `($n::timestamptz IS NULL OR (posted_at, id) < ($n::timestamptz, $m::bigint))`.
 */
export function keysetAfterMicros(
  cursor: string | undefined,
  list: ListName,
  scope: string,
): { ok: true; params: [string | null, number | null] } | { ok: false; detail: string } {
  if (cursor === undefined) return { ok: true, params: [null, null] };
  const decoded = decodeCursor(cursor, list, scope);
  if (!decoded.ok) return decoded;
  const { createdAt, id, subMillisecondUs } = decoded.position;
  const iso = createdAt.toISOString().replace("Z", `${String(subMillisecondUs ?? 0).padStart(3, "0")}Z`);
  return { ok: true, params: [iso, id] };
}

/**
 * The page of a first-page query (no cursor), which cannot be refused: throws if it was, since that is a bug.
 * For pages that render the first page on the server.
 */
export function firstPageOrThrow<T>(result: PageResult<T>): Page<T> {
  if (!result.ok) throw new Error(`a first page was refused: ${result.detail}`);
  return { items: result.items, nextCursor: result.nextCursor };
}
