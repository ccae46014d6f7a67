/**
 * The one reading of a deciding statement's answer (docs/decisions/053: each rule once): a payment, a transfer and a
 * transfer's reversal each claim their key and decide in one database function that returns the claimed row, or no
 * row when the key already had one (its `INSERT ... ON CONFLICT DO NOTHING`). A reward's statement reads its row the
 * same way ({@link decidedFromRow}) beside its own cap verdict.
 */
import type { QueryResult } from "pg";
import { classifyDbError } from "./db-errors";
import { toLedgerEntry, type LedgerEntry, type StoredResponse } from "./entry";

/** A row a statement claimed and decided: the terminal row and its stored first response. */
export interface DecidedClaim {
  readonly entry: LedgerEntry;
  readonly response: StoredResponse;
}

/** `row` (the entry's columns, ENTRY_COLUMNS) as a {@link DecidedClaim}. Pure. */
export function decidedFromRow(row: Record<string, unknown>): DecidedClaim {
  return {
    entry: toLedgerEntry(row),
    response: { status: row.response_status as number, body: row.response_body as string },
  };
}

/**
 * Awaits `statement` (a deciding statement that returns the claimed row's ENTRY_COLUMNS) and returns the row it
 * claimed, or null when it claimed nothing because the key already had a row: no row back, or a unique violation of
 * the claim index itself (SQLSTATE 23505 and its constraint name, contract section 8; ON CONFLICT makes it
 * unexpected, but it means exactly "the key is taken"). The caller then reads that row (a loser, or its own earlier
 * attempt). Throws every other error as it comes.
 */
export async function decidedClaimOf(
  statement: Promise<QueryResult<Record<string, unknown>>>,
): Promise<DecidedClaim | null> {
  let row: Record<string, unknown> | undefined;
  try {
    row = (await statement).rows[0];
  } catch (error) {
    if (classifyDbError(error).kind === "already_claimed") return null;
    throw error;
  }
  return row ? decidedFromRow(row) : null;
}
