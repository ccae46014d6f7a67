import { parseQuery, statementQuerySchema } from "@/lib/http/list-query";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";
import { readStatement } from "@/lib/wallet/read-statement";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/** GET /api/v1/statement?from=&to=&limit=&cursor=: one page of the caller's postings (contract section 13.4). */
const handleGet = withPrincipal(async (request, principal) => {
  const query = parseQuery(statementQuerySchema, new URL(request.url).searchParams);
  if (!query.ok) return problemResponse("invalid_request", query.detail);
  const page = await readStatement(principal.userId, query.value);
  if (!page.ok) return problemResponse("invalid_request", page.detail);
  const { ok: _ok, ...body } = page;
  return jsonResponse(200, body);
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
