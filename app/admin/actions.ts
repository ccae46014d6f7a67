"use server";
/**
 * Server actions of the admin page. Thin: check the admin, call one lib function, return its result.
 */
import { revalidatePath } from "next/cache";
import { reconcileOnce, type ReconcileResult } from "@/lib/reconciler/reconcile-once";
import { currentAdmin } from "./require-admin";

export type ReconcileActionState =
  | { kind: "idle" }
  | { kind: "done"; result: ReconcileResult; finishedAt: string }
  | { kind: "forbidden" };

/**
 * "Reconcile now": one reconciler pass (the same as `POST /api/v1/admin/reconcile`), for admins only.
 * Returns the pass's result, or `forbidden` for a non-admin. A database failure throws (the page's error
 * boundary shows it): nothing is claimed here that could be left behind unseen.
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
