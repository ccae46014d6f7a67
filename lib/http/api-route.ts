/**
 * How every API route file exports its methods (contract section 9): the methods it implements, plus a
 * `405 method_not_allowed` problem with `Allow` for every other method (Next.js would answer a bare 405 with no
 * body and no `Allow`), an `OPTIONS` that lists the same `Allow`, and the API's security headers on every
 * response (./security-headers.ts).
 *
 *     export const { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } = apiRoute({ GET: withPrincipal(...) });
 */
import { problemResponse } from "./respond";
import { withErrors } from "./route";
import { withApiSecurityHeaders } from "./security-headers";

type RouteHandler<P> = (request: Request, context: { readonly params: Promise<P> }) => Promise<Response>;

/** The methods a route file may implement itself (HEAD follows GET, OPTIONS is answered here). */
export type ImplementedMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

const IMPLEMENTABLE: readonly ImplementedMethod[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** Every method a route file exports (Next.js's own list minus CONNECT and TRACE, which Node refuses). */
export type RouteExports<P> = Record<ImplementedMethod | "HEAD" | "OPTIONS", RouteHandler<P>>;

/**
 * Builds a route file's exports from the handlers it implements.
 *
 * @param handlers the implemented methods (each usually wrapped by withPrincipal or withErrors).
 * @returns a handler for every method: implemented ones with security headers added, the rest answering
 *   405 problem+json with `Allow` listing the implemented methods (plus HEAD with GET, and OPTIONS).
 */
export function apiRoute<P = Record<string, never>>(
  handlers: Partial<Record<ImplementedMethod, RouteHandler<P>>>,
): RouteExports<P> {
  const implemented = IMPLEMENTABLE.filter((method) => handlers[method] !== undefined);
  const allow = [...implemented, ...(handlers.GET ? ["HEAD"] : []), "OPTIONS"].sort().join(", ");
  const notAllowed: RouteHandler<P> = async (request) =>
    withApiSecurityHeaders(
      problemResponse(
        "method_not_allowed",
        `${request.method} is not allowed here. Allowed: ${allow}.`,
        {},
        { Allow: allow },
      ),
    );
  const secured =
    (handler: RouteHandler<P> | undefined): RouteHandler<P> =>
    async (request, context) =>
      handler ? withApiSecurityHeaders(await handler(request, context)) : notAllowed(request, context);
  const options: RouteHandler<P> = withErrors<P>(async () =>
    withApiSecurityHeaders(new Response(null, { status: 204, headers: { Allow: allow } })),
  );
  return {
    GET: secured(handlers.GET),
    HEAD: secured(handlers.GET),
    POST: secured(handlers.POST),
    PUT: secured(handlers.PUT),
    PATCH: secured(handlers.PATCH),
    DELETE: secured(handlers.DELETE),
    OPTIONS: options,
  };
}
