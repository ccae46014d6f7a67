import { z } from "zod";
import { env } from "../env";
import { boundedLimit, decodeCursor, encodeCursor } from "../pagination/cursor";
import { readBalanceAt } from "./read-balance-at";
import { type PostingPosition, readStatementPostings } from "./read-statement-postings";
import { isoMicros, microsOf, rangeInstants, type StatementRange, statementPostingSchema } from "./statement-posting";

/** `GET /api/v1/statement`'s answer (contract section 13.4); the OpenAPI document's `Statement`. */
export const statementPageSchema = z
  .strictObject({
    from: z.string().meta({ description: "The first UTC day, as asked." }),
    to: z.string().meta({ description: "The last UTC day (included), as asked." }),
    currency: z.string().regex(/^[A-Z]{3}$/),
    openingBalance: z.int().meta({
      description:
        "The wallet account when the range begins (after every posting before `from`), signed integer minor units: " +
        "the balance, or minus the debt. Each line's `balanceAfter` follows from it.",
    }),
    lines: z.array(statementPostingSchema).meta({ description: "Oldest first by time booked." }),
    nextCursor: z.string().nullable().meta({ description: "Pass as `?cursor=` for the next page; null on the last." }),
  })
  .meta({ id: "Statement", description: "One page of the caller's statement." });
export type StatementPage = z.infer<typeof statementPageSchema>;

const US_PER_MS = 1000n;

/** The cursor of the page after `position`, for the caller and range of `scope`. */
function cursorAfter(scope: string, position: PostingPosition): string {
  const us = microsOf(position.postedAt);
  const ms = us / US_PER_MS;
  return encodeCursor("statement", scope, {
    createdAt: new Date(Number(ms)),
    id: Number(position.id),
    subMillisecondUs: Number(us - ms * US_PER_MS),
  });
}

/** The position a cursor names, or the 400 detail refusing it. */
function positionOf(
  cursor: string | undefined,
  scope: string,
):
  | { ok: true; after: PostingPosition | null }
  | {
      ok: false;
      detail: string;
    } {
  if (cursor === undefined) return { ok: true, after: null };
  const decoded = decodeCursor(cursor, "statement", scope);
  if (!decoded.ok) return decoded;
  const { createdAt, id, subMillisecondUs } = decoded.position;
  const us = BigInt(createdAt.getTime()) * US_PER_MS + BigInt(subMillisecondUs ?? 0);
  return { ok: true, after: { postedAt: isoMicros(us), id: String(id) } };
}

/** The wallet account just before the range begins: the balance at its first microsecond's predecessor. */
async function openingAccount(userId: string, range: StatementRange): Promise<{ account: number; currency: string }> {
  const beforeStart = isoMicros(BigInt(Date.parse(rangeInstants(range).startIso)) * US_PER_MS - 1n);
  const wallet = await readBalanceAt(userId, beforeStart);
  return { account: wallet.balance - (wallet.debt ?? 0), currency: wallet.currency };
}

/**
 * One page of the caller's statement (contract section 13.4; docs/decisions/058): every posting to the user's wallet
 * account booked in `range` (UTC days `YYYY-MM-DD`, both included, already validated: `statementQuerySchema`), oldest
 * first by `(posted_at, id)`, each with its reference, kind, counter-party in words, signed amount and running balance
 * after it; at most `limit` lines (1..100, default 50) after the position of `cursor` (docs/decisions/020; its scope
 * is the caller and the range), and the account when the range begins.
 *
 * Returns the page and its `nextCursor` (null on the last page), or `ok: false` with a 400 detail for a malformed
 * or foreign cursor (another user's, list's or range's). Throws database errors.
 */
export async function readStatement(
  userId: string,
  options: StatementRange & { limit?: number; cursor?: string },
): Promise<({ ok: true } & StatementPage) | { ok: false; detail: string }> {
  const range = { from: options.from, to: options.to };
  const scope = `user:${userId}|${range.from}|${range.to}`;
  const position = positionOf(options.cursor, scope);
  if (!position.ok) return position;
  const limit = boundedLimit(options.limit);
  const [read, opening] = await Promise.all([
    readStatementPostings(userId, range, position.after, limit + 1),
    openingAccount(userId, range),
  ]);
  const lines = read.lines.slice(0, limit);
  const last = read.positions[limit - 1];
  const nextCursor = read.lines.length > limit && last !== undefined ? cursorAfter(scope, last) : null;
  const currency = lines[0]?.currency ?? (opening.currency || env().WALLET_CURRENCY);
  return { ok: true, ...range, currency, openingBalance: opening.account, lines, nextCursor };
}
