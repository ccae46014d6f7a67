/**
 * Route handler wrappers: authentication and authorization live here, once (style guide: dub's
 * withWorkspace), and so does the last-resort error handler that turns an unexpected throw into a 500
 * problem with a request id.
 */
import { getPrincipal, type Principal } from "../auth/principal";
import { clientGoneResponse, internalErrorResponse, problemResponse } from "./respond";

export interface RouteContext<P> {
  readonly params: Promise<P>;
}

type Handler<P> = (request: Request, context: RouteContext<P>) => Promise<Response>;
type AuthedHandler<P> = (request: Request, principal: Principal, context: RouteContext<P>) => Promise<Response>;

/** Wraps a public handler: an unexpected throw becomes `500 internal_error` (logged with a request id). */
export function withErrors<P = Record<string, never>>(handler: Handler<P>): Handler<P> {
  return async (request, context) => {
    try {
      return await handler(request, context);
    } catch (error) {
      // A client that hung up mid-request (its body stream aborted) is not a fault of ours: nobody reads the
      // answer, and an error-level log line per disconnect would bury real errors.
      if (request.signal.aborted) return clientGoneResponse(request);
      return internalErrorResponse(error, { method: request.method, path: new URL(request.url).pathname });
    }
  };
}

/**
 * Wraps a handler that needs a signed-in user (session cookie or `Authorization: Bearer <token>`):
 * `401 unauthenticated` without one; with `{ admin: true }`, `403 forbidden` for non-admins.
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
    if (options.admin && principal.role !== "admin") {
      return problemResponse("forbidden", "This endpoint is for administrators.");
    }
    return await handler(request, principal, context);
  });
}
