import { entriesQuerySchema, parseQuery } from "@/lib/http/list-query";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { listEntries } from "@/lib/wallet/list-entries";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** GET /api/v1/entries?limit=&cursor=: every movement, newest first, one page (contract section 4). */
const handleGet = withPrincipal(async (request, principal) => {
  const query = parseQuery(entriesQuerySchema, new URL(request.url).searchParams);
  if (!query.ok) return problemResponse("invalid_request", query.detail);
  const page = await listEntries(principal.userId, query.value);
  if (!page.ok) return problemResponse("invalid_request", page.detail);
  return jsonResponse(200, { entries: page.items, nextCursor: page.nextCursor });
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
