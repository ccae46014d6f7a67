import { env } from "@/lib/env";
import { readJsonBody } from "@/lib/http/read-json-body";
import { validateTopupRequest } from "@/lib/http/operation-requests";
import { jsonResponse, operationResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { parseQuery, topupsQuerySchema } from "@/lib/http/list-query";
import { createTopup } from "@/lib/topups/create-topup";
import { listTopups } from "@/lib/topups/list-topups";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** POST /api/v1/topups `{ refId, amount }` (contract section 4). */
const handlePost = withPrincipal(async (request, principal) => {
  const settings = env();
  const body = await readJsonBody(request, settings.BODY_LIMIT_BYTES);
  if (!body.ok) return problemResponse(body.code, body.detail);
  const input = validateTopupRequest(body.value, body.raw, {
    maxAmountMinor: settings.MAX_AMOUNT_MINOR,
    walletCurrency: settings.WALLET_CURRENCY,
  });
  if (!input.ok) return problemResponse("invalid_request", input.detail);
  return operationResponse(await createTopup({ userId: principal.userId, ...input.value }));
});

/** GET /api/v1/topups?status=&limit=&cursor=: the caller's top-ups, newest first, one page (contract section 4). */
const handleGet = withPrincipal(async (request, principal) => {
  const query = parseQuery(topupsQuerySchema, new URL(request.url).searchParams);
  if (!query.ok) return problemResponse("invalid_request", query.detail);
  const page = await listTopups(principal.userId, query.value);
  if (!page.ok) return problemResponse("invalid_request", page.detail);
  return jsonResponse(200, { topups: page.items, nextCursor: page.nextCursor });
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost, GET: handleGet });
