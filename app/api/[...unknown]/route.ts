/**
 * Every `/api/*` path that no other route matches (Next.js prefers static and more specific segments): a
 * `404 not_found` problem for any method, instead of the HTML not-found page (contract section 9).
 */
import { apiRoute } from "@/lib/http/api-route";
import { problemResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";

export const dynamic = "force-dynamic";

async function notFoundHandler(): Promise<Response> {
  return problemResponse("not_found", "No API endpoint at this path.");
}

/** Through withErrors, so the answer carries the request id like every API response. */
const notFound = withErrors<{ unknown: string[] }>(notFoundHandler);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute<{ unknown: string[] }>({
  GET: notFound,
  POST: notFound,
  PUT: notFound,
  PATCH: notFound,
  DELETE: notFound,
});
