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

/** Which policy {@link pageContentSecurityPolicy} builds: the deployed app's, or `next dev`'s. */
export type PolicyMode = "production" | "development";

/**
 * What `next dev` needs on top of the production policy, and nothing else (decision 057): React's development
 * build calls `eval()` to rebuild server components' call stacks in the browser (its console error names
 * `'unsafe-eval'`; the production build never calls it). The hot-reload websocket (`/_next/hmr`) is on
 * the page's own host and port, which `connect-src 'self'` already allows (CSP Level 3 matches `ws:` to `'self'`),
 * so it needs no entry.
 */
const DEVELOPMENT_SCRIPT_ALLOWANCES = ["'unsafe-eval'"] as const;

/**
 * The pages' policy for one response (CSP Level 3). Scripts run only with this response's nonce, and scripts
 * they load (`'strict-dynamic'`: Next's chunks, any viewer or chart library added later) inherit the trust; no
 * `'unsafe-eval'` in production. Inline styles are allowed (`style-src 'unsafe-inline'`): React and libraries set
 * `style` attributes, and a style cannot run code. `frame-ancestors 'none'` stops the clickjacking found in the issue;
 * `form-action 'self'` keeps forms from posting elsewhere; `base-uri 'none'` stops `<base>` from re-pointing
 * relative script URLs; `object-src 'none'` removes plugins.
 *
 * @param nonce a fresh base64 value of at least 128 random bits, used once.
 * @param mode `"production"` (the default, every deployed build) or `"development"` (`next dev` only), which adds
 *   exactly {@link DEVELOPMENT_SCRIPT_ALLOWANCES} to `script-src`; inline scripts without the nonce, other origins,
 *   framing, plugins and foreign form targets stay blocked in both (decision 057).
 * @returns the header's value, directives joined with `"; "`. Never throws.
 */
export function pageContentSecurityPolicy(nonce: string, mode: PolicyMode = "production"): string {
  const scriptSources = [`'nonce-${nonce}'`, "'strict-dynamic'"];
  if (mode === "development") scriptSources.push(...DEVELOPMENT_SCRIPT_ALLOWANCES);
  return [
    "default-src 'self'",
    `script-src ${scriptSources.join(" ")}`,
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
 * The policy mode of this process: `"development"` only under `next dev`, which sets NODE_ENV to `development`
 * (Next.js inlines the value into the proxy's bundle); `next build`/`next start` set `production`, and any other
 * value is treated as production, so a deployment can never get the development allowances by accident.
 */
export function pagePolicyMode(): PolicyMode {
  return process.env.NODE_ENV === "development" ? "development" : "production";
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
