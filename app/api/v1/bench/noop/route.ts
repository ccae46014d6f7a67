import { env } from "@/lib/env";
import { readJsonBody } from "@/lib/http/read-json-body";
import { jsonResponse, problemResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";
import { apiRoute } from "@/lib/http/api-route";

export const dynamic = "force-dynamic";

/**
 * POST /api/v1/bench/noop: the framework's floor for `npm run bench` ("an empty JSON POST route of the same
 * build"), only when the bench started the app for itself (BENCH_FLOOR_ROUTE=1); otherwise the same `404 not_found`
 * as any unknown API path, and absent from the public API description. It reads the body the way every real POST
 * route does (content type, size limit, strict JSON) and answers 200 `{ "ok": true }`; it does no authentication and
 * touches no database, Redis or bank. The benchmark divides each real route's requests/s by this route's, measured in
 * the same run.
 */
const handlePost = withErrors(async (request) => {
  if (env().BENCH_FLOOR_ROUTE !== "1") return problemResponse("not_found", "No API endpoint at this path.");
  const body = await readJsonBody(request, env().BODY_LIMIT_BYTES);
  if (!body.ok) return problemResponse(body.code, body.detail);
  return jsonResponse(200, { ok: true });
});

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ POST: handlePost });
