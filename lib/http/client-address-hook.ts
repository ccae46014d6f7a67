/**
 * Runs for every request before Next.js sees it (installed once per process by `instrumentation.ts`):
 * 1. writes the resolved client address into {@link CLIENT_ADDRESS_HEADER} (see ./client-address.ts for why it
 *    must happen here);
 * 2. sends a request whose path does not percent-decode (`/api/v1/topups/%ZZ`, case C24) to a route that answers
 *    400, instead of letting Next.js fail to decode it and answer a bare-text 500.
 */
import { subscribe } from "node:diagnostics_channel";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { CLIENT_ADDRESS_HEADER, CLIENT_ADDRESS_HOOK_KEY, resolveClientAddress } from "./client-address";

/** Where undecodable requests go: app/api/invalid-url/route.ts (problem+json) and app/invalid-url/route.ts (page). */
export const INVALID_URL_API_PATH = "/api/invalid-url";
export const INVALID_URL_PAGE_PATH = "/invalid-url";

/**
 * The path an undecodable request URL is rewritten to, or null when its path decodes.
 *
 * @param url the request target as received (`/path?query`).
 */
export function invalidUrlRewrite(url: string): string | null {
  const path = url.split("?", 1)[0] ?? "";
  try {
    decodeURIComponent(path);
    return null;
  } catch {
    return path.startsWith("/api/") ? INVALID_URL_API_PATH : INVALID_URL_PAGE_PATH;
  }
}

/** Node publishes this synchronously in the HTTP parser, right before `server.emit('request', ...)`. */
const REQUEST_START_CHANNEL = "http.server.request.start";

/**
 * Subscribes to Node's request-start channel (idempotent: a second call changes nothing).
 *
 * @param trustedHops TRUSTED_PROXY_HOPS (0..10), see {@link resolveClientAddress}.
 */
export function installClientAddressHook(trustedHops: number): void {
  const g = globalThis as Record<symbol, unknown>;
  if (g[CLIENT_ADDRESS_HOOK_KEY] === true) return;
  subscribe(REQUEST_START_CHANNEL, (message) => {
    const { request, socket } = message as { request: IncomingMessage; socket: Socket };
    // Assigning replaces any value the client sent under this name (Node lowercases header names).
    request.headers[CLIENT_ADDRESS_HEADER] = resolveClientAddress({
      peer: socket.remoteAddress,
      forwardedFor: request.headers["x-forwarded-for"],
      trustedHops,
    });
    const rewrite = invalidUrlRewrite(request.url ?? "/");
    if (rewrite) request.url = rewrite;
  });
  g[CLIENT_ADDRESS_HOOK_KEY] = true;
}
