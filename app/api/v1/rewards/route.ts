import { env } from "@/lib/env";
import { readJsonBody } from "@/lib/http/read-json-body";
import { validateRewardRequest } from "@/lib/http/operation-requests";
import { operationResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { claimReward } from "@/lib/rewards/claim-reward";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/**
 * POST /api/v1/rewards `{ adId }` (contract sections 4 and 6): 201 `{ reward }` credited; the stored 201
 * replayed for the same ad on the same local day; 429 daily_cap_reached; 503 cap_store_unavailable;
 * 422 idempotency_key_reused; 400/401/413/415 before any database or Redis work.
 */
const handlePost = withPrincipal(async (request, principal) => {
  const body = await readJsonBody(request, env().BODY_LIMIT_BYTES);
  if (!body.ok) return problemResponse(body.code, body.detail);
  const input = validateRewardRequest(body.value);
  if (!input.ok) return problemResponse("invalid_request", input.detail);
  return operationResponse(await claimReward({ userId: principal.userId, adId: input.value.adId }));
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
