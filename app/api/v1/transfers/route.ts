import { readTransferInput } from "@/lib/http/operation-requests";
import { operationResponse } from "@/lib/http/respond";
import { withInputThenPrincipal } from "@/lib/http/route";
import { createTransfer, transferParams } from "@/lib/transfers/create-transfer";
import { apiRoute } from "@/lib/http/api-route";
import { runOnceForIdentical } from "@/lib/http/identical-operations";

export const dynamic = "force-dynamic";

/**
 * POST /api/v1/transfers `{ refId, to, amount, currency?, note? }` (contract section 15); the body is validated
 * before authentication.
 */
const handlePost = withInputThenPrincipal(readTransferInput, async (_request, principal, input) =>
  operationResponse(
    // Identical requests running at once (a duplicate storm) share one run's stored response.
    await runOnceForIdentical("transfer", principal.userId, { refId: input.refId, ...transferParams(input) }, () =>
      createTransfer({ userId: principal.userId, ...input }),
    ),
  ),
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
