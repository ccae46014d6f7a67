/**
 * The request id of contract section 4, carried through one request's asynchronous work with
 * AsyncLocalStorage, so that every log line written while the request runs (lib/log.ts reads it) and every
 * problem+json body built for it (lib/http/respond.ts) names the same id without passing it around.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

/** Header that carries the id both ways (contract section 4). */
export const REQUEST_ID_HEADER = "X-Request-Id";

/** Contract section 4: a client's id is accepted when it is 1..128 characters of `[A-Za-z0-9._:-]`. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export interface RequestContext {
  /** The client's `X-Request-Id` when acceptable, else a minted UUID. */
  readonly requestId: string;
}

// One store per process, kept on globalThis: Next.js may load this module once per route bundle, and every copy
// must see the same store (as lib/db.ts does for the pool).
const storeKey = Symbol.for("wallet.http.requestContext");
type GlobalWithStore = typeof globalThis & { [storeKey]?: AsyncLocalStorage<RequestContext> };
function storage(): AsyncLocalStorage<RequestContext> {
  const g = globalThis as GlobalWithStore;
  g[storeKey] ??= new AsyncLocalStorage<RequestContext>();
  return g[storeKey];
}

/**
 * The id to use for a request whose `X-Request-Id` header is `header` (null when absent): the header itself when
 * it matches {@link REQUEST_ID_PATTERN} (taken exactly as sent, never trimmed), otherwise a fresh UUID v4.
 */
export function requestIdFrom(header: string | null): string {
  return header !== null && REQUEST_ID_PATTERN.test(header) ? header : randomUUID();
}

/** Runs `work` with `context` as the current request context (for everything it awaits). */
export function runWithRequestContext<T>(context: RequestContext, work: () => Promise<T>): Promise<T> {
  return storage().run(context, work);
}

/** The current request's id, or undefined outside a request (CLIs, timers, server actions). */
export function currentRequestId(): string | undefined {
  return storage().getStore()?.requestId;
}
