import { isValidRefId } from "@/lib/ledger";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { getPayout } from "@/lib/payouts/get-payout";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** GET /api/v1/payouts/{refId}: the current state; 404 also for another user's refId (contract section 14). */
const handleGet = withPrincipal<{ refId: string }>(async (_request, principal, context) => {
  const { refId } = await context.params;
  if (!isValidRefId(refId))
    return problemResponse("invalid_request", "refId: must be 1..128 characters of A-Z a-z 0-9 . _ : -");
  const payout = await getPayout(principal.userId, refId);
  if (!payout) return problemResponse("not_found", "No payout with this refId.");
  return jsonResponse(200, { payout });
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute<{ refId: string }>({ GET: handleGet });
