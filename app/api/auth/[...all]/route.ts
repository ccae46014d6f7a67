/**
 * better-auth's HTTP endpoints under `/api/auth/*`. The instance is created on the first request, not at import,
 * so `next build` opens no database connection.
 *
 * Only the endpoints this product offers over HTTP are reachable (everything else is `404 not_found`), so a
 * library upgrade cannot silently open a new door (update-user, change-email, delete-user, ...); the pages use
 * `auth.api.*` from server actions, and every endpoint, HTTP or not, still runs the hooks of lib/auth/auth.ts
 * (throttles, account-field rules). Bodies are read under BODY_LIMIT_BYTES before the library sees them; a
 * cookie-carrying POST must be same-origin (contract section 9, case C23); a 429 from the throttles is the
 * contract's `rate_limited` problem.
 */
import { auth } from "@/lib/auth/auth";
import { env } from "@/lib/env";
import { apiRoute } from "@/lib/http/api-route";
import { readBodyWithin } from "@/lib/http/read-json-body";
import { problemResponse } from "@/lib/http/respond";
import { withErrors } from "@/lib/http/route";
import { isSameOrigin } from "@/lib/http/same-origin";

export const dynamic = "force-dynamic";

/** `<METHOD> <path under /api/auth>` of the endpoints offered over HTTP. */
const OFFERED = new Set([
  "GET /get-session",
  "POST /sign-in/email",
  "POST /sign-up/email",
  "POST /sign-out",
  // The links mailed by sign-up and "forgot password" (docs/decisions/054-mail-outbox.md): better-auth checks the
  // token and redirects to the app's own page (its callbackURL, which it refuses unless it is this app's origin).
  "GET /verify-email",
  "GET /reset-password/:token",
]);

/** A reset link's token segment: better-auth's 24 characters of [A-Za-z0-9]; anything else is not a link of ours. */
const RESET_LINK = /^\/reset-password\/[A-Za-z0-9]{1,64}$/;

async function handle(request: Request): Promise<Response> {
  const actual = new URL(request.url).pathname.replace(/^\/api\/auth/, "");
  const path = RESET_LINK.test(actual) ? "/reset-password/:token" : actual;
  if (!OFFERED.has(`${request.method} ${path}`)) {
    const known = [...OFFERED].some((entry) => entry.endsWith(` ${path}`));
    return known
      ? problemResponse("method_not_allowed", `${request.method} is not allowed here.`, {}, { Allow: allowFor(path) })
      : problemResponse("not_found", "No such authentication endpoint.");
  }
  let forwarded = request;
  if (request.method === "POST") {
    if (request.headers.has("cookie") && !isSameOrigin(request.headers)) {
      return problemResponse(
        "forbidden",
        "Cross-origin requests cannot use the session cookie; send it from this site.",
      );
    }
    const limitBytes = env().BODY_LIMIT_BYTES;
    const body = await readBodyWithin(request, limitBytes);
    if (!body) return problemResponse("payload_too_large", `The body must be at most ${limitBytes} bytes.`);
    forwarded = new Request(request.url, { method: "POST", headers: request.headers, body: Buffer.from(body) });
  }
  const response = await auth().handler(forwarded);
  if (response.status !== 429) return response;
  const retryAfter = response.headers.get("retry-after");
  const detail = await response
    .json()
    .then((body: { message?: unknown }) => (typeof body.message === "string" ? body.message : "Too many requests."))
    .catch(() => "Too many requests.");
  return problemResponse("rate_limited", detail, {}, retryAfter ? { "Retry-After": retryAfter } : {});
}

function allowFor(path: string): string {
  return [...OFFERED]
    .filter((entry) => entry.endsWith(` ${path}`))
    .map((entry) => entry.split(" ")[0])
    .join(", ");
}

const handler = withErrors<{ all: string[] }>(handle);

export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute<{ all: string[] }>({
  GET: handler,
  POST: handler,
  PUT: handler,
  PATCH: handler,
  DELETE: handler,
});
