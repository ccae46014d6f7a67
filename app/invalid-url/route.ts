/**
 * Where lib/http/client-address-hook.ts sends a page request whose path does not percent-decode (case C24): a
 * 400 page (no scripts) instead of Next.js's bare-text 500. A route handler, because a page cannot set a status.
 */
export const dynamic = "force-dynamic";

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>400 Bad request</title></head>
<body><main><h1>400 — this address is not valid</h1><p>The link is broken: part of it cannot be read.
<a href="/wallet">Go to your wallet</a>.</p></main></body></html>`;

function badRequest(): Response {
  return new Response(PAGE, {
    status: 400,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
}

export async function GET(): Promise<Response> {
  return badRequest();
}

export async function POST(): Promise<Response> {
  return badRequest();
}
