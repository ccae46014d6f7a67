import { readTopupInput } from "@/lib/http/operation-requests";
import { jsonResponse, operationResponse, problemResponse } from "@/lib/http/respond";
import { withInputThenPrincipal, withPrincipal } from "@/lib/http/route";
import { parseQuery, topupsQuerySchema } from "@/lib/http/list-query";
import { createTopup } from "@/lib/topups/create-topup";
import { listTopups } from "@/lib/topups/list-topups";
import { apiRoute } from "@/lib/http/api-route";
import { runOnceForIdentical } from "@/lib/http/identical-operations";

export const dynamic = "force-dynamic";

/** POST /api/v1/topups `{ refId, amount }` (contract section 4); the body is validated before authentication. */
const handlePost = withInputThenPrincipal(readTopupInput, async (_request, principal, input) =>
  operationResponse(
    // Identical requests running at once (a duplicate storm) share one run's stored response.
    await runOnceForIdentical("topup", principal.userId, input, () =>
      createTopup({ userId: principal.userId, ...input }),
    ),
  ),
);

/** GET /api/v1/topups?status=&limit=&cursor=: the caller's top-ups, newest first, one page (contract section 4). */
const handleGet = withPrincipal(async (request, principal) => {
  const query = parseQuery(topupsQuerySchema, new URL(request.url).searchParams);
  if (!query.ok) return problemResponse("invalid_request", query.detail);
  const page = await listTopups(principal.userId, query.value);
  if (!page.ok) return problemResponse("invalid_request", page.detail);
  return jsonResponse(200, { topups: page.items, nextCursor: page.nextCursor });
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost, GET: handleGet });
