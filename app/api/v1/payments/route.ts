import { readPaymentInput } from "@/lib/http/operation-requests";
import { operationResponse } from "@/lib/http/respond";
import { withInputThenPrincipal } from "@/lib/http/route";
import { createPayment } from "@/lib/payments/create-payment";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** POST /api/v1/payments `{ orderId, amount }` (contract section 4); the body is validated before authentication. */
const handlePost = withInputThenPrincipal(readPaymentInput, async (_request, principal, input) =>
  operationResponse(await createPayment({ userId: principal.userId, ...input })),
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
