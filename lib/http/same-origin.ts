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
 * Every header the request carries must say so: `Sec-Fetch-Site`, when present, must be `same-origin` (`same-site`
 * is exactly the case C23 attacker), and `Origin`, when present, must be one of `origins`. Browsers that predate
 * `Sec-Fetch-Site` send `Origin` on every POST, PUT, PATCH and DELETE; browsers that send both send a same-origin
 * pair, so `same-origin` beside a foreign `Origin` is a request no browser makes and is refused (case C33: Next.js
 * refused such a server action itself, with a 500). A request with neither header proves nothing and is refused: a
 * browser that sends cookies also sends one of them, and a script that sends neither should use a bearer token.
 *
 * @param headers the request's headers.
 * @param origins the app's origins (default {@link appOrigins}).
 */
export function isSameOrigin(headers: Headers, origins: readonly string[] = appOrigins()): boolean {
  const site = headers.get("sec-fetch-site");
  const origin = headers.get("origin");
  if (site === null && origin === null) return false;
  if (site !== null && site !== "same-origin") return false;
  return origin === null || origins.includes(origin);
}

/**
 * Whether a request's `Origin` (when it has one) names the host the request was sent to, as Next.js compares them
 * before it runs a server action: the first `X-Forwarded-Host` value, else `Host`. A browser's same-origin request
 * always passes; one that fails would be refused by Next.js with a 500 (case C33), so proxy.ts refuses it first with
 * the 403 page. True without an `Origin`, or with one that is not a URL's origin (isSameOrigin refuses those).
 *
 * @param headers the request's headers, as the client sent them.
 */
export function originMatchesHost(headers: Headers): boolean {
  const origin = headers.get("origin");
  if (origin === null) return true;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return true;
  }
  const forwardedHost = headers.get("x-forwarded-host")?.split(",")[0]?.trim();
  return originHost === (forwardedHost || headers.get("host"));
}
