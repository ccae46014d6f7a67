import { z } from "zod";
import { USER_ID_PATTERN } from "@/lib/bank/merchant-ref";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** `?userId=` (optional, once): a user id as it appears in merchant references. */
const querySchema = z.object({ userId: z.string().regex(USER_ID_PATTERN, "must be a user id").optional() });

/**
 * POST /api/v1/admin/reconcile: admins only (403 otherwise); runs one reconciler pass and answers 200 with its
 * result `{ examined, completed, failed, redriven, skipped, anomalies?, bankUnreachable?, errored?,
 * databaseUnreachable? }` (contract section 4): partial results when rows failed or the database went away, never a
 * 500 for one row (case C29).
 * The request has no body. Optional `?userId=<id>` limits the pass to that user's rows and charges (an admin
 * looking at one account); 400 invalid_request when it is not a user id. The pass is idempotent, so a retried
 * POST only runs another pass.
 */
const handlePost = withPrincipal(
  async (request) => {
    const params = new URL(request.url).searchParams;
    if (params.getAll("userId").length > 1) return problemResponse("invalid_request", "userId: give it at most once");
    const query = querySchema.safeParse({ userId: params.get("userId") ?? undefined });
    if (!query.success)
      return problemResponse("invalid_request", `userId: ${query.error.issues[0]?.message ?? "invalid"}`);
    const { userId } = query.data;
    return jsonResponse(200, await reconcileOnce(userId ? { userIds: [userId] } : {}));
  },
  { admin: true },
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
