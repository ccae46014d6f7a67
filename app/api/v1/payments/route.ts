import { env } from "@/lib/env";
import { readJsonBody } from "@/lib/http/read-json-body";
import { validatePaymentRequest } from "@/lib/http/operation-requests";
import { operationResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { createPayment } from "@/lib/payments/create-payment";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** POST /api/v1/payments `{ orderId, amount }` (contract section 4). */
const handlePost = withPrincipal(async (request, principal) => {
  const settings = env();
  const body = await readJsonBody(request, settings.BODY_LIMIT_BYTES);
  if (!body.ok) return problemResponse(body.code, body.detail);
  const input = validatePaymentRequest(body.value, body.raw, {
    maxAmountMinor: settings.MAX_AMOUNT_MINOR,
    walletCurrency: settings.WALLET_CURRENCY,
  });
  if (!input.ok) return problemResponse("invalid_request", input.detail);
  return operationResponse(await createPayment({ userId: principal.userId, ...input.value }));
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
