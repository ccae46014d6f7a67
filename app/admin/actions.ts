"use server";
/**
 * Server actions of the admin page. Thin: check the admin, call one lib function, return its result.
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { adminTopupsQuerySchema } from "@/lib/http/list-query";
import type { PageResult } from "@/lib/pagination/cursor";
import { reconcileOnce, type ReconcileResult } from "@/lib/reconciler/reconcile-once";
import { type AdminTopupFilters, type AdminTopupRow, listAdminTopupRows } from "./admin-topup-rows";
import { currentAdmin } from "./require-admin";

export type ReconcileActionState =
  | { kind: "idle" }
  | { kind: "done"; result: ReconcileResult; finishedAt: string }
  | { kind: "forbidden" };

/**
 * "Reconcile now": one reconciler pass (the same as `POST /api/v1/admin/reconcile`), for admins only.
 * Returns the pass's result, or `forbidden` for a non-admin. A row that fails, or a database that cannot be reached,
 * does not throw: the result is partial, with `errored`, `row_error` anomalies and `databaseUnreachable` saying what
 * was left (case C29). Anything else that throws reaches the page's error boundary: nothing is claimed here that
 * could be left behind unseen.
 */
export async function reconcileNowAction(
  _previous: ReconcileActionState,
  _form: FormData,
): Promise<ReconcileActionState> {
  const admin = await currentAdmin();
  if (!admin) return { kind: "forbidden" };
  const result = await reconcileOnce();
  revalidatePath("/admin");
  return { kind: "done", result, finishedAt: new Date().toISOString() };
}

const filtersSchema = z.strictObject({
  status: adminTopupsQuerySchema.shape.status,
  stuck: z.boolean(),
  userEmail: z.email().max(254).optional(),
  limit: z.int().min(1).max(100).optional(),
});

/**
 * "Show more" under the admin page's top-ups: the page after `cursor` for the same `filters`.
 * Admins only; a non-admin, or a malformed or foreign cursor (another list or other filters), gets `ok: false`.
 */
export async function moreAdminTopupsAction(
  filters: AdminTopupFilters,
  cursor: string,
): Promise<PageResult<AdminTopupRow>> {
  const admin = await currentAdmin();
  if (!admin) return { ok: false, detail: "administrators only" };
  // The arguments come from the browser: checked like any other input before they reach a query.
  const checked = filtersSchema.safeParse(filters);
  if (!checked.success || typeof cursor !== "string") return { ok: false, detail: "invalid filters or cursor" };
  return await listAdminTopupRows(checked.data, cursor);
}
