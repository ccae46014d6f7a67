import { parseQuery, walletQuerySchema } from "@/lib/http/list-query";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { getWallet } from "@/lib/wallet/get-wallet";
import { readBalanceAt } from "@/lib/wallet/read-balance-at";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/**
 * GET /api/v1/wallet: `{ balance, currency }` now (contract section 4); with `?at=<instant>`, the balance and debt
 * at that instant, `{ balance, currency, debt?, at }` (contract section 13.4), or 400 for an instant refused.
 */
const handleGet = withPrincipal(async (request, principal) => {
  const query = parseQuery(walletQuerySchema, new URL(request.url).searchParams);
  if (!query.ok) return problemResponse("invalid_request", query.detail);
  const { at } = query.value;
  if (at === undefined) return jsonResponse(200, await getWallet(principal.userId));
  return jsonResponse(200, await readBalanceAt(principal.userId, at));
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
