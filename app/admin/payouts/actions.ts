"use server";
/**
 * "Show more" under the admin payouts page's list. Thin: check the admin and the arguments, call one lib function.
 */
import { z } from "zod";
import { type AdminPayoutView, listAdminPayouts } from "@/lib/admin/list-admin-payouts";
import type { PageResult } from "@/lib/pagination/cursor";
import { currentAdmin } from "../require-admin";
import { PAYOUT_STATUSES } from "./statuses";

const filtersSchema = z.strictObject({
  status: z.enum(PAYOUT_STATUSES).optional(),
  limit: z.int().min(1).max(100).optional(),
});

export type AdminPayoutFilters = z.infer<typeof filtersSchema>;

/**
 * The page of payouts after `cursor` for the same `filters`. Admins only; a non-admin, or a malformed or foreign
 * cursor (another list or another status), gets `ok: false`.
 */
export async function moreAdminPayoutsAction(
  filters: AdminPayoutFilters,
  cursor: string,
): Promise<PageResult<AdminPayoutView>> {
  const admin = await currentAdmin();
  if (!admin) return { ok: false, detail: "administrators only" };
  // The arguments come from the browser: checked like any other input before they reach a query.
  const checked = filtersSchema.safeParse(filters);
  if (!checked.success || typeof cursor !== "string") return { ok: false, detail: "invalid filters or cursor" };
  return await listAdminPayouts({ ...checked.data, cursor });
}
