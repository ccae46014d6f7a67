import { listAccountPostings } from "@/lib/admin/list-account-postings";
import { apiRoute } from "@/lib/http/api-route";
import { accountPostingsQuerySchema, parseQuery } from "@/lib/http/list-query";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withPrincipal } from "@/lib/http/route";

export const dynamic = "force-dynamic";

/**
 * GET /api/v1/admin/books/{account}/postings?limit=&cursor=: admins only; one page of a house account's postings,
 * newest first (contract section 13.5). An account that is not a house account is 404 not_found.
 */
const handleGet = withPrincipal<{ account: string }>(
  async (request, _principal, context) => {
    const query = parseQuery(accountPostingsQuerySchema, new URL(request.url).searchParams);
    if (!query.ok) return problemResponse("invalid_request", query.detail);
    const { account } = await context.params;
    const result = await listAccountPostings({ account, ...query.value });
    if (result.kind === "unknown_account") return problemResponse("not_found", "account: no such house account");
    if (result.kind === "invalid_cursor") return problemResponse("invalid_request", result.detail);
    return jsonResponse(200, { account: result.account, postings: result.items, nextCursor: result.nextCursor });
  },
  { admin: true },
);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: handleGet });
