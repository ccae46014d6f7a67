"use server";
/**
 * "Show more" on the wallet page: the next page of the signed-in user's history, from the same lib function, filters
 * and cursors as `GET /api/v1/entries`.
 */
import { requireSessionUser } from "@/lib/auth/session-user";
import { entriesQuerySchema } from "@/lib/http/list-query";
import type { PageResult } from "@/lib/pagination/cursor";
import { listEntries, type StatementFilters } from "@/lib/wallet/list-entries";
import type { StatementLine } from "@/lib/wallet/statement-line";
import { STATEMENT_PAGE_SIZE } from "./page-sizes";

/**
 * The page of the history after `cursor` for `filters` (validated again here: a server action's arguments are the
 * browser's word). A malformed or foreign cursor, or filters the API would refuse: `ok: false`.
 */
export async function moreHistoryAction(cursor: string, filters: StatementFilters): Promise<PageResult<StatementLine>> {
  const user = await requireSessionUser();
  const query = entriesQuerySchema.safeParse({ ...filters, cursor });
  if (!query.success) return { ok: false, detail: "these filters are not valid" };
  return await listEntries(user.userId, { ...query.data, limit: STATEMENT_PAGE_SIZE });
}
