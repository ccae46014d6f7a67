/**
 * Same-origin enforcement for cookie-authenticated state changes (contract section 9, case C23).
 *
 * Cookies are SameSite=Lax, which stops cross-*site* POSTs but not cross-*origin* ones from the same site: a
 * page on another port of the same host (or a sibling subdomain) is "same-site", so its auto-submitted form
 * reaches the app with the user's cookie. Only the browser-set `Origin` and `Sec-Fetch-Site` headers tell the
 * app where a request came from, and a page's script cannot forge either.
 */
import { env } from "../env";

/** Methods that change nothing (RFC 9110 section 9.2.1); every other method is a state change. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** True for methods that may change state (POST, PUT, PATCH, DELETE, anything unknown). */
export function isStateChangingMethod(method: string): boolean {
  return !SAFE_METHODS.has(method.toUpperCase());
}

/**
 * The origins the app is served from: APP_URL's, and both loopback names of PORT (the demo and tests reach the
 * app as 127.0.0.1 or localhost). better-auth's `trustedOrigins` is the same list.
 */
export function appOrigins(): string[] {
  const { APP_URL, PORT } = env();
  return [...new Set([new URL(APP_URL).origin, `http://127.0.0.1:${PORT}`, `http://localhost:${PORT}`])];
}

/**
 * Whether a request provably comes from one of the app's own pages.
 *
 * `Sec-Fetch-Site`, when present, decides: it must be `same-origin` (`same-site` is exactly the case C23
 * attacker). Browsers that predate it send `Origin` on every POST, PUT, PATCH and DELETE, which must then be one
 * of `origins`. A request with neither header proves nothing and is refused: a browser that sends cookies also
 * sends one of them, and a script that sends neither should use a bearer token.
 *
 * @param headers the request's headers.
 * @param origins the app's origins (default {@link appOrigins}).
 */
export function isSameOrigin(headers: Headers, origins: readonly string[] = appOrigins()): boolean {
  const site = headers.get("sec-fetch-site");
  const origin = headers.get("origin");
  if (site !== null) return site === "same-origin";
  return origin !== null && origins.includes(origin);
}
