import { readRewardInput } from "@/lib/http/operation-requests";
import { operationResponse } from "@/lib/http/respond";
import { withInputThenPrincipal } from "@/lib/http/route";
import { creditReward } from "@/lib/rewards/credit-reward";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/**
 * POST /api/v1/rewards `{ adId }` (contract sections 4 and 6): 201 `{ reward }` credited; the stored 201
 * replayed for the same ad on the same local day; 429 daily_cap_reached; 503 cap_store_unavailable;
 * 422 idempotency_key_reused; 400/413/415, then 401, before any database or Redis work.
 */
const handlePost = withInputThenPrincipal(readRewardInput, async (_request, principal, input) =>
  operationResponse(await creditReward({ userId: principal.userId, adId: input.adId })),
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
