import { readPaymentInput } from "@/lib/http/operation-requests";
import { operationResponse } from "@/lib/http/respond";
import { withInputThenPrincipal } from "@/lib/http/route";
import { createPayment, paymentParams } from "@/lib/payments/create-payment";
import { apiRoute } from "@/lib/http/api-route";
import { runOnceForIdentical } from "@/lib/http/identical-operations";

export const dynamic = "force-dynamic";

/**
 * POST /api/v1/payments `{ orderId, amount, currency?, payee?, note? }` (contract section 4; the payee and the note:
 * docs/decisions/055); the body is validated before authentication.
 */
const handlePost = withInputThenPrincipal(readPaymentInput, async (_request, principal, input) =>
  operationResponse(
    // Identical requests running at once (a duplicate storm) share one run's stored response.
    await runOnceForIdentical("payment", principal.userId, { orderId: input.orderId, ...paymentParams(input) }, () =>
      createPayment({ userId: principal.userId, ...input }),
    ),
  ),
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
