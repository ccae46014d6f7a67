/**
 * The client's network address, decided in one place (contract section 9, case C22).
 *
 * Next.js 16 hands route handlers and server actions a `Request` without its socket, and `next start` keeps a
 * client's own `X-Forwarded-For` as it arrived: it only fills the header with the socket's peer when the client
 * sent none (`req.headers['x-forwarded-for'] ??= socket.remoteAddress` in next/dist/server/base-server.js,
 * checked on 16.4.6). Reading that header would let a client pick its address. So the address is resolved
 * where the socket is still known: ./client-address-hook.ts subscribes to Node's `http.server.request.start`
 * diagnostics channel, which Node publishes synchronously before it emits the request to Next, computes the
 * address with {@link resolveClientAddress} and writes it to {@link CLIENT_ADDRESS_HEADER}, replacing whatever
 * the client sent under that name. Everything else (throttles, better-auth's own IP handling) reads that
 * header through {@link clientAddressFrom}.
 */
import { isIP } from "node:net";

/** The request header that carries the resolved address inside the app. Any value a client sends is replaced. */
export const CLIENT_ADDRESS_HEADER = "x-wallet-client-address";

/** Set on globalThis by the hook once it is subscribed; see {@link clientAddressFrom}. */
export const CLIENT_ADDRESS_HOOK_KEY = Symbol.for("wallet.clientAddress.hook");

/** What the address is when the socket's peer is unknown (a socket already closed): one shared bucket. */
export const UNKNOWN_ADDRESS = "unknown";

/**
 * An address as written by a socket or a proxy, in canonical text: IPv4-mapped IPv6 (`::ffff:1.2.3.4`) becomes
 * the IPv4 address, brackets and ports are removed (`[::1]:443`, `1.2.3.4:80`), IPv6 is lowercased.
 * Returns null when the text is not an IP address.
 */
export function normalizeAddress(text: string): string | null {
  let value = text.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(value);
  if (bracketed?.[1]) value = bracketed[1];
  else if (/^\d{1,3}(?:\.\d{1,3}){3}:\d+$/.test(value)) value = value.slice(0, value.lastIndexOf(":"));
  value = value.toLowerCase();
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(value);
  if (mapped?.[1]) value = mapped[1];
  return isIP(value) === 0 ? null : value;
}

/**
 * Resolves the client's address from the socket's peer and the `X-Forwarded-For` chain.
 *
 * With `trustedHops` 0 the peer is the answer and the header is ignored. With N, the chain is the header's
 * entries (every `X-Forwarded-For` field, in order) followed by the peer, and the answer is the entry N places
 * to the left of the peer: each of your N proxies appended the address it saw, so that entry was written by
 * your outermost proxy. Entries left of it were written by the client and are never used. When the chain is
 * shorter (the request skipped a proxy), the leftmost entry is taken, as Express's `trust proxy` does; an entry
 * that is not an IP address is skipped in favour of the next one to its right (written by a proxy closer to us).
 *
 * @param input.peer the socket's `remoteAddress` (undefined once the socket closed).
 * @param input.forwardedFor the raw `X-Forwarded-For` value(s), if any.
 * @param input.trustedHops TRUSTED_PROXY_HOPS, 0..10.
 * @returns a normalized IP address, or {@link UNKNOWN_ADDRESS}.
 */
export function resolveClientAddress(input: {
  peer: string | undefined;
  forwardedFor: string | string[] | undefined;
  trustedHops: number;
}): string {
  const peer = (input.peer && normalizeAddress(input.peer)) || UNKNOWN_ADDRESS;
  if (input.trustedHops <= 0 || input.forwardedFor === undefined) return peer;
  const header = Array.isArray(input.forwardedFor) ? input.forwardedFor.join(",") : input.forwardedFor;
  const chain = [
    ...header
      .split(",")
      .map((entry) => entry.trim())
      .filter((entry) => entry.length > 0),
    peer,
  ];
  for (let index = Math.max(0, chain.length - 1 - input.trustedHops); index < chain.length - 1; index++) {
    const address = normalizeAddress(chain[index]!);
    if (address) return address;
  }
  return peer;
}

/**
 * The client's address for a request, as resolved by the hook.
 *
 * @param headers the request's headers (`request.headers`, or `await headers()` in a server action).
 * @returns the address; null outside the app server (a CLI or a test calling lib/ directly: no network client,
 *   so no per-address limit applies).
 * @throws Error inside the app server when the header is missing although the hook is installed (the request
 *   was accepted before the hook subscribed) or when the hook is not installed at all: a request whose address
 *   is unknown is refused (500) rather than trusted with a client-chosen one.
 */
export function clientAddressFrom(headers: Headers): string | null {
  const insideAppServer = process.env.NEXT_RUNTIME === "nodejs";
  const hookInstalled = (globalThis as Record<symbol, unknown>)[CLIENT_ADDRESS_HOOK_KEY] === true;
  if (!insideAppServer && !hookInstalled) return null;
  const value = headers.get(CLIENT_ADDRESS_HEADER);
  if (!hookInstalled || value === null) {
    throw new Error(`client address unknown: ${hookInstalled ? "header missing" : "hook not installed"}`);
  }
  return value;
}
