/**
 * Security headers (contract section 9): every response carries the static set below; pages get a
 * Content-Security-Policy with a per-request nonce from `proxy.ts`; API responses a policy that allows nothing
 * (they are data, never documents to render). `Strict-Transport-Security` is added when APP_URL is https.
 *
 * Where each is set: next.config.ts `headers()` puts the static set on every path (a backstop that also covers
 * responses Next.js makes by itself); `proxy.ts` sets pages' CSP; {@link withApiSecurityHeaders} sets the API
 * policy and HSTS at run time from lib/http/api-route.ts. API requests never pass through the proxy (Next
 * buffers proxied bodies and cuts them at its proxy body limit, which would undo the webhook's own bound).
 */
import { env } from "../env";

/** On every response: no MIME sniffing, no full URLs in Referer to other origins, no framing (old browsers). */
export const STATIC_SECURITY_HEADERS: ReadonlyArray<{ key: string; value: string }> = [
  { key: "X-Content-Type-Options", value: "nosniff" },
  { key: "Referrer-Policy", value: "strict-origin-when-cross-origin" },
  { key: "X-Frame-Options", value: "DENY" },
];

/** The policy of API responses and static assets: nothing may load, nothing may frame them. */
export const API_CONTENT_SECURITY_POLICY = "default-src 'none'; frame-ancestors 'none'";

/**
 * The pages' policy for one response (CSP Level 3). Scripts run only with this response's nonce, and scripts
 * they load (`'strict-dynamic'`: Next's chunks, any viewer or chart library added later) inherit the trust; no
 * `'unsafe-eval'`. Inline styles are allowed (`style-src 'unsafe-inline'`): React and libraries set `style`
 * attributes, and a style cannot run code. `frame-ancestors 'none'` stops the clickjacking found in the issue;
 * `form-action 'self'` keeps forms from posting elsewhere; `base-uri 'none'` stops `<base>` from re-pointing
 * relative script URLs; `object-src 'none'` removes plugins.
 *
 * @param nonce a fresh base64 value of at least 128 random bits, used once.
 */
export function pageContentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'nonce-${nonce}' 'strict-dynamic'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/**
 * Two years, the value HSTS preload lists ask for (RFC 6797 section 6.1.1); sent only when APP_URL is https,
 * since browsers ignore it over http and a wrong value would lock users out of a site that has no TLS.
 */
const HSTS_MAX_AGE_S = 2 * 365 * 24 * 3600;

/** `Strict-Transport-Security` for this deployment, or null when APP_URL is not https. */
export function strictTransportSecurity(): string | null {
  return new URL(env().APP_URL).protocol === "https:" ? `max-age=${HSTS_MAX_AGE_S}; includeSubDomains` : null;
}

/**
 * Sets the static headers, the API policy and (with https) HSTS on an API response, and removes
 * `X-Powered-By`. Returns the same response, or a copy when its headers are immutable (a fetched response).
 */
export function withApiSecurityHeaders(response: Response): Response {
  let target = response;
  try {
    target.headers.set("Content-Security-Policy", API_CONTENT_SECURITY_POLICY);
  } catch {
    target = new Response(response.body, response);
    target.headers.set("Content-Security-Policy", API_CONTENT_SECURITY_POLICY);
  }
  for (const { key, value } of STATIC_SECURITY_HEADERS) target.headers.set(key, value);
  const hsts = strictTransportSecurity();
  if (hsts) target.headers.set("Strict-Transport-Security", hsts);
  target.headers.delete("X-Powered-By");
  return target;
}
