import { readPayoutInput } from "@/lib/http/operation-requests";
import { operationResponse } from "@/lib/http/respond";
import { withInputThenPrincipal } from "@/lib/http/route";
import { createPayout, payoutParams } from "@/lib/payouts/create-payout";
import { apiRoute } from "@/lib/http/api-route";
import { runOnceForIdentical } from "@/lib/http/identical-operations";

export const dynamic = "force-dynamic";

/**
 * POST /api/v1/payouts `{ refId, amount, currency?, destination }` (contract section 14); the body is validated
 * before authentication.
 */
const handlePost = withInputThenPrincipal(readPayoutInput, async (_request, principal, input) =>
  operationResponse(
    // Identical requests running at once (two tabs, a retry storm) share one run's stored response.
    await runOnceForIdentical("payout", principal.userId, { refId: input.refId, ...payoutParams(input) }, () =>
      createPayout({ userId: principal.userId, ...input }),
    ),
  ),
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
