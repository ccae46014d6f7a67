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
import type { ProblemCode } from "../problems";

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

/** Options of {@link withPrincipal} and {@link withInputThenPrincipal}. */
export interface PrincipalOptions {
  /** Only admins pass; others get `403 forbidden`. */
  readonly admin?: boolean;
}

/**
 * Authentication, then authorization and same-origin, in that order (contract section 9, "Order of checks"):
 * `401 unauthenticated` without a session cookie or a valid `Authorization: Bearer <token>`; `403 forbidden` for
 * a cookie-authenticated state change (any method but GET, HEAD, OPTIONS, with a body or without) that is not
 * provably same-origin (case C23; ./same-origin.ts); with `admin`, `403 forbidden` for non-admins. Bearer-token
 * requests are not subject to the origin check: a browser never attaches a token on its own.
 * Returns the principal, or the problem response that refuses the request.
 */
async function authorize(request: Request, options: PrincipalOptions): Promise<Principal | Response> {
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
    return problemResponse("forbidden", "Cross-origin requests cannot use the session cookie; send it from this site.");
  }
  if (options.admin && principal.role !== "admin") {
    return problemResponse("forbidden", "This endpoint is for administrators.");
  }
  return principal;
}

/**
 * Wraps a handler that needs a signed-in user and reads no body: see `authorize` above for the 401 and 403
 * answers. The handler receives the principal, whose `userId` is the only source of ledger keys' user ids.
 */
export function withPrincipal<P = Record<string, never>>(
  handler: AuthedHandler<P>,
  options: PrincipalOptions = {},
): Handler<P> {
  return withErrors(async (request, context) => {
    const principal = await authorize(request, options);
    if (principal instanceof Response) return principal;
    return await handler(request, principal, context);
  });
}

/** A request's validated input, or the problem that refuses it (400, 413 or 415). */
export type InputOutcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly code: ProblemCode; readonly detail: string };

/**
 * Wraps an operation's handler (a POST with a body) in the order of checks of contract section 9: first the
 * request itself is read and validated by `parseInput` (`415`, `413`, `400`: nothing about the caller is looked
 * up for a request that cannot be valid), then the caller is authenticated and authorized as {@link withPrincipal}
 * does (`401`, `403`), and only then does the handler run with the principal and the validated input.
 */
export function withInputThenPrincipal<T, P = Record<string, never>>(
  parseInput: (request: Request) => Promise<InputOutcome<T>>,
  handler: (request: Request, principal: Principal, input: T, context: RouteContext<P>) => Promise<Response>,
  options: PrincipalOptions = {},
): Handler<P> {
  return withErrors(async (request, context) => {
    const input = await parseInput(request);
    if (!input.ok) return problemResponse(input.code, input.detail);
    const principal = await authorize(request, options);
    if (principal instanceof Response) return principal;
    return await handler(request, principal, input.value, context);
  });
}
