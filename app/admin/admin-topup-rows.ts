/**
 * The admin page's top-up list, one page at a time: every top-up (optionally in one status), or with "stuck only"
 * the stuck ones (lib/admin/stuck.ts), each row marked stuck or not at the time it was read. The page renders the
 * first page and "Show more" (./actions.ts) asks for the next with the same filters and the last cursor.
 */
import { listAdminTopups, type AdminTopupView } from "@/lib/admin/list-admin-topups";
import { listStuckTopups } from "@/lib/admin/list-stuck-topups";
import { isStuckTopup } from "@/lib/admin/stuck";
import type { EntryStatus } from "@/lib/ledger";
import type { PageResult } from "@/lib/pagination/cursor";

export type AdminTopupRow = AdminTopupView & { stuck: boolean };

export interface AdminTopupFilters {
  status?: EntryStatus;
  stuck: boolean;
  /** One user's rows: their email, lowercased as stored. */
  userEmail?: string;
  /** Rows per page, 1..100 (default 50). */
  limit?: number;
}

/** One page of the list for `filters` after `cursor` (none: the first page); `ok: false` for a refused cursor. */
export async function listAdminTopupRows(
  filters: AdminTopupFilters,
  cursor?: string,
): Promise<PageResult<AdminTopupRow>> {
  const options = { status: filters.status, userEmail: filters.userEmail, limit: filters.limit, cursor };
  const page = filters.stuck ? await listStuckTopups(options) : await listAdminTopups(options);
  if (!page.ok) return page;
  const nowMs = Date.now();
  return { ...page, items: page.items.map((t) => ({ ...t, stuck: isStuckTopup(t, nowMs) })) };
}
