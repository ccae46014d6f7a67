/**
 * The Next.js proxy (Next 16's name for middleware), for pages only: API routes are excluded by the matcher
 * below and set their headers in lib/http/api-route.ts (Next buffers and truncates bodies that pass through a
 * proxy, which would undo the webhook's body bound).
 *
 * 1. Every state-changing request to a page (a server action: the forms of sign-in, sign-up, wallet, tokens,
 *    admin, sign-out) must be same-origin (contract section 9, case C23), and its `Origin` must name the host it
 *    was sent to (case C33); otherwise a 403 page. Next.js refuses an `Origin` that does not match the host on
 *    server actions by itself, but with a 500, whatever `Sec-Fetch-Site` says.
 * 2. A fresh nonce per response and the pages' Content-Security-Policy (lib/http/security-headers.ts; under
 *    `next dev` with the one allowance React's development build needs, decision 057). Next.js
 *    reads the policy from the request header set here and puts the nonce on its own scripts; a component that
 *    needs it reads `x-nonce` with `headers()`. Pages must render dynamically (the root layout reads the
 *    session, so they all do).
 */
import { type NextRequest, NextResponse } from "next/server";
import { isSameOrigin, isStateChangingMethod, originMatchesHost } from "@/lib/http/same-origin";
import { pageContentSecurityPolicy, pagePolicyMode, strictTransportSecurity } from "@/lib/http/security-headers";

/** 16 random bytes: the 128 bits CSP Level 3 asks of a nonce. */
const NONCE_BYTES = 16;

const FORBIDDEN_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>403 Forbidden</title></head>
<body><main><h1>403 — request refused</h1><p>This form was sent from another site. Open the wallet and submit it
there.</p></main></body></html>`;

export function proxy(request: NextRequest): NextResponse {
  const nonce = Buffer.from(crypto.getRandomValues(new Uint8Array(NONCE_BYTES))).toString("base64");
  const policy = pageContentSecurityPolicy(nonce, pagePolicyMode());
  let response: NextResponse;
  if (
    isStateChangingMethod(request.method) &&
    (!isSameOrigin(request.headers) || !originMatchesHost(request.headers))
  ) {
    response = new NextResponse(FORBIDDEN_PAGE, {
      status: 403,
      headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
    });
  } else {
    const requestHeaders = new Headers(request.headers);
    requestHeaders.set("x-nonce", nonce);
    requestHeaders.set("Content-Security-Policy", policy);
    response = NextResponse.next({ request: { headers: requestHeaders } });
  }
  response.headers.set("Content-Security-Policy", policy);
  const hsts = strictTransportSecurity();
  if (hsts) response.headers.set("Strict-Transport-Security", hsts);
  return response;
}

export const config = {
  matcher: [
    {
      // Everything but the API and Next's static files (their headers come from next.config.ts).
      source: "/((?!api/|_next/static|_next/image|favicon.ico|icon.svg).*)",
      // Prefetches fetch data for a later navigation; the navigation's own response carries the policy.
      missing: [
        { type: "header", key: "next-router-prefetch" },
        { type: "header", key: "purpose", value: "prefetch" },
      ],
    },
  ],
};
