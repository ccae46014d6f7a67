import { isValidRefId } from "@/lib/ledger";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { getTopup } from "@/lib/topups/get-topup";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** GET /api/v1/topups/{refId}: the current state; 404 also for another user's refId (contract section 4). */
const handleGet = withPrincipal<{ refId: string }>(async (_request, principal, context) => {
  const { refId } = await context.params;
  if (!isValidRefId(refId))
    return problemResponse("invalid_request", "refId: must be 1..128 characters of A-Z a-z 0-9 . _ : -");
  const topup = await getTopup(principal.userId, refId);
  if (!topup) return problemResponse("not_found", "No top-up with this refId.");
  return jsonResponse(200, { topup });
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute<{ refId: string }>({ GET: handleGet });
