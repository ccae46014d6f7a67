"use server";
/**
 * "Show more" on the wallet page: the next page of the signed-in user's top-ups or statement,
 * from the same lib functions and cursors as `GET /api/v1/topups` and `GET /api/v1/entries`.
 */
import { requireSessionUser } from "@/lib/auth/session-user";
import type { StatementEntryView, TopupView } from "@/lib/ledger";
import type { PageResult } from "@/lib/pagination/cursor";
import { listTopups } from "@/lib/topups/list-topups";
import { listEntries } from "@/lib/wallet/list-entries";
import { STATEMENT_PAGE_SIZE, TOPUPS_PAGE_SIZE } from "./page-sizes";

/** The page of top-ups after `cursor` (a malformed or foreign cursor: `ok: false`). */
export async function moreTopupsAction(cursor: string): Promise<PageResult<TopupView>> {
  const user = await requireSessionUser();
  return await listTopups(user.userId, { limit: TOPUPS_PAGE_SIZE, cursor });
}

/** The page of the statement after `cursor` (a malformed or foreign cursor: `ok: false`). */
export async function moreStatementAction(cursor: string): Promise<PageResult<StatementEntryView>> {
  const user = await requireSessionUser();
  return await listEntries(user.userId, { limit: STATEMENT_PAGE_SIZE, cursor });
}
