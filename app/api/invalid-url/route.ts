/**
 * Where lib/http/client-address-hook.ts sends an API request whose path does not percent-decode (case C24):
 * `400 invalid_request` problem+json for every method, before any authentication or database work.
 */
import { apiRoute } from "@/lib/http/api-route";
import { problemResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";

export const dynamic = "force-dynamic";

async function invalidUrlHandler(): Promise<Response> {
  return problemResponse("invalid_request", "The URL is not valid: its path does not percent-decode (RFC 3986).");
}

/** Through withErrors, so the answer carries the request id like every API response. */
const invalidUrl = withErrors<Record<string, never>>(invalidUrlHandler);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({
  GET: invalidUrl,
  POST: invalidUrl,
  PUT: invalidUrl,
  PATCH: invalidUrl,
  DELETE: invalidUrl,
});
