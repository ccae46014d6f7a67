/**
 * Route handler wrappers: authentication, authorization and same-origin enforcement live here, once (style
 * guide: dub's withWorkspace), and so do the request id (contract section 4) and the last-resort error handler
 * that turns an unexpected throw into a 500 problem with that request id. Every `/api/v1` handler goes through
 * {@link withErrors}, directly or through {@link withPrincipal}; route files export their methods through
 * `apiRoute` (./api-route.ts).
 */
import { getPrincipal, type Principal } from "../auth/principal";
import { log } from "../log";
import { metrics } from "../metrics/registry";
import { currentRequestId, REQUEST_ID_HEADER, requestIdFrom, runWithRequestContext } from "./request-context";
import { routeTemplateOf } from "./route-templates";
import { clientGoneResponse, internalErrorResponse, problemResponse } from "./respond";
import { isSameOrigin, isStateChangingMethod } from "./same-origin";

export interface RouteContext<P> {
  readonly params: Promise<P>;
}

type Handler<P> = (request: Request, context: RouteContext<P>) => Promise<Response>;
type AuthedHandler<P> = (request: Request, principal: Principal, context: RouteContext<P>) => Promise<Response>;

/**
 * Wraps a public handler. The request gets its id (the client's `X-Request-Id` when it is 1..128 characters of
 * `[A-Za-z0-9._:-]`, else a minted UUID; contract section 4), which every log line written while it runs and every
 * problem body built for it carry, and which the response echoes in `X-Request-Id`. An unexpected throw becomes
 * `500 internal_error` naming that id (logged with the error). Every answer is counted in the HTTP metrics by route
 * template, method and status (lib/metrics). A wrapper inside another (a route that composes wrapped handlers) only
 * runs its handler: the outermost one owns the id, the header and the count.
 */
export function withErrors<P = Record<string, never>>(handler: Handler<P>): Handler<P> {
  return (request, context) => {
    if (currentRequestId() !== undefined) return handler(request, context);
    const requestId = requestIdFrom(request.headers.get(REQUEST_ID_HEADER));
    return runWithRequestContext({ requestId }, async () => {
      const startedMs = performance.now();
      let response: Response;
      try {
        response = await handler(request, context);
      } catch (error) {
        // A client that hung up mid-request (its body stream aborted) is not a fault of ours: nobody reads the
        // answer, and an error-level log line per disconnect would bury real errors.
        response = request.signal.aborted
          ? clientGoneResponse(request)
          : internalErrorResponse(error, { method: request.method, path: new URL(request.url).pathname });
      }
      response.headers.set(REQUEST_ID_HEADER, requestId);
      const durationMs = performance.now() - startedMs;
      const path = new URL(request.url).pathname;
      const labels = { route: routeTemplateOf(path), method: request.method, status: String(response.status) };
      metrics().httpRequests.inc(labels);
      metrics().httpDuration.observe(labels, durationMs / 1000);
      log().debug({ ...labels, path, durationMs: Math.round(durationMs) }, "request answered");
      return response;
    });
  };
}

/**
 * Wraps a handler that needs a signed-in user (session cookie or `Authorization: Bearer <token>`):
 * `401 unauthenticated` without one; `403 forbidden` for a cookie-authenticated state change (any method but
 * GET, HEAD, OPTIONS, with a body or without) that is not provably same-origin (contract section 9, case C23;
 * ./same-origin.ts); with `{ admin: true }`, `403 forbidden` for non-admins. Bearer-token requests are not
 * subject to the origin check: a browser never attaches a token on its own.
 * The handler receives the principal, whose `userId` is the only source of ledger keys' user ids.
 */
export function withPrincipal<P = Record<string, never>>(
  handler: AuthedHandler<P>,
  options: { admin?: boolean } = {},
): Handler<P> {
  return withErrors(async (request, context) => {
    const principal = await getPrincipal(request.headers);
    if (!principal) {
      return problemResponse(
        "unauthenticated",
        "Sign in, or send Authorization: Bearer <token>.",
        {},
        { "WWW-Authenticate": 'Bearer realm="wallet"' },
      );
    }
    if (principal.via === "session" && isStateChangingMethod(request.method) && !isSameOrigin(request.headers)) {
      return problemResponse(
        "forbidden",
        "Cross-origin requests cannot use the session cookie; send it from this site.",
      );
    }
    if (options.admin && principal.role !== "admin") {
      return problemResponse("forbidden", "This endpoint is for administrators.");
    }
    return await handler(request, principal, context);
  });
}
