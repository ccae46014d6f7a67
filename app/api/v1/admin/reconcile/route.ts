import { jsonResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";

export const dynamic = "force-dynamic";

/**
 * POST /api/v1/admin/reconcile: admins only (403 otherwise); runs one reconciler pass and answers 200 with its
 * result `{ examined, completed, failed, redriven, skipped, anomalies?, bankUnreachable? }` (contract section 4).
 * The request has no body; the pass's own work is idempotent, so a retried POST only runs another pass.
 */
export const POST = withPrincipal(
  async () => {
    return jsonResponse(200, await reconcileOnce());
  },
  { admin: true },
);
