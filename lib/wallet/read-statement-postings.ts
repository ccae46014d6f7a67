import { pool } from "../db";
import {
  rangeInstants,
  STATEMENT_POSTINGS_SQL,
  type StatementPosting,
  type StatementPostingRow,
  type StatementRange,
  statementPostingOf,
} from "./statement-posting";

/** Where a statement's page ended: the last line's time (microsecond text, `postedAt`) and its posting's id. */
export interface PostingPosition {
  readonly postedAt: string;
  readonly id: string;
}

/** Lines read for one page, and where the last of them is. */
export interface PostingsRead {
  readonly lines: StatementPosting[];
  readonly positions: PostingPosition[];
}

/**
 * The caller's wallet postings in `range` (UTC days, both included), oldest first by `(posted_at, id)`, strictly
 * after `after` when given, at most `limit` (the caller bounds it). The keyset read of `STATEMENT_POSTINGS_SQL`
 * (lib/wallet/statement-posting.ts; docs/decisions/020 and 058): rows booked while a reader pages are newer than its
 * position and are read on a later page, never skipped or repeated.
 *
 * Returns the lines and each line's position (for the next cursor or the next keyset page). Throws database errors.
 */
export async function readStatementPostings(
  userId: string,
  range: StatementRange,
  after: PostingPosition | null,
  limit: number,
): Promise<PostingsRead> {
  const { startIso, endIso } = rangeInstants(range);
  const result = await pool().query<StatementPostingRow>(STATEMENT_POSTINGS_SQL, [
    userId,
    startIso,
    endIso,
    after?.postedAt ?? null,
    after?.id ?? null,
    limit,
  ]);
  const lines = result.rows.map(statementPostingOf);
  return { lines, positions: result.rows.map((row, i) => ({ postedAt: lines[i]!.postedAt, id: row.id })) };
}
