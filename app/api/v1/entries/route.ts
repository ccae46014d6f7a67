import { parseListQuery } from "@/lib/http/list-query";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { listEntries } from "@/lib/wallet/list-entries";

export const dynamic = "force-dynamic";

/** GET /api/v1/entries?limit=: every movement, newest first (contract section 4). */
export const GET = withPrincipal(async (request, principal) => {
  const query = parseListQuery(new URL(request.url).searchParams);
  if (!query.ok) return problemResponse("invalid_request", query.detail);
  return jsonResponse(200, { entries: await listEntries(principal.userId, { limit: query.value.limit }) });
});
