/**
 * Ports and readiness probes for the scripts that start local services (tests, CI, demo).
 * Everything binds to 127.0.0.1 only: nothing started by these scripts may be reachable from another machine.
 */
import { createServer } from "node:net";

/**
 * Asks the kernel for a free TCP port on 127.0.0.1 (binds port 0, reads the port, closes).
 *
 * Returns the port number. The port is free at the moment of return; another process could still take it
 * before the caller binds it, which is why callers that spawn a server check that the server really started.
 * Throws when no socket can be bound on 127.0.0.1 at all.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen({ host: "127.0.0.1", port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new Error("could not read the port of a socket bound to 127.0.0.1:0"));
        return;
      }
      const { port } = address;
      server.close((error) => (error ? reject(error) : resolve(port)));
    });
  });
}

/**
 * Whether TCP port `port` can be bound on `host` (default 127.0.0.1) right now: binds it exclusively and closes.
 * Resolves false when the bind fails with EADDRINUSE or EACCES (another server, or a privileged port); rejects on
 * any other error. Like {@link freePort}, the answer can change the moment after it is given.
 */
export function isPortFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EADDRINUSE" || error.code === "EACCES") resolve(false);
      else reject(error);
    });
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** How long one probe may take. 2 s: a healthy local server answers in milliseconds; a hung one is retried. */
const PROBE_TIMEOUT_MS = 2000;
/** Pause between probes. 250 ms: fast enough that start-up is not slowed visibly, slow enough not to spin. */
const PROBE_INTERVAL_MS = 250;

export interface WaitForHttpOptions {
  /**
   * Called before every probe; a non-null string aborts the wait with that message (for example "the server
   * exited with code 1"), so a crashed service fails fast instead of after the whole timeout.
   */
  failIf?: () => string | null;
  /** When true, any HTTP response counts as ready (for a service with no health route: it is listening). */
  anyStatus?: boolean;
}

/**
 * Polls `url` with GET until it answers a 2xx status (any status with `options.anyStatus`).
 *
 * - `url`: absolute http(s) URL, e.g. `http://127.0.0.1:3000/api/v1/health`.
 * - `timeoutMs`: total time allowed, in milliseconds.
 *
 * Resolves with nothing once a 2xx arrives. Rejects with an Error naming the URL, the timeout and the last
 * status or network error when `timeoutMs` passes, or at once when `options.failIf` returns a message.
 */
export async function waitForHttp(url: string, timeoutMs: number, options: WaitForHttpOptions = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "no attempt made";
  for (;;) {
    const failure = options.failIf?.();
    if (failure) throw new Error(`gave up waiting for ${url}: ${failure}`);
    try {
      const status = await probeStatus(url, PROBE_TIMEOUT_MS);
      if ((status >= 200 && status < 300) || options.anyStatus) return;
      last = `HTTP ${status}`;
    } catch (error) {
      last = describeFetchError(error);
    }
    if (Date.now() >= deadline) {
      throw new Error(`${url} did not answer 2xx within ${timeoutMs} ms (last: ${last})`);
    }
    await sleep(PROBE_INTERVAL_MS);
  }
}

/**
 * One GET of `url`: resolves with the status once the answer's body has been read, rejects when that does not
 * happen within `timeoutMs`. The bound is this function's own timer, not only the fetch's abort signal: a body
 * read that an abort fails to settle (nodejs/node#56917) would otherwise leave a readiness wait pending for ever,
 * with nothing printed.
 */
export async function probeStatus(url: string, timeoutMs: number): Promise<number> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`no answer within ${timeoutMs} ms`);
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    return await Promise.race([
      (async () => {
        const response = await fetch(url, { signal: controller.signal });
        // The body is drained so the connection is released; its content does not matter here.
        await response.arrayBuffer();
        return response.status;
      })(),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves after `durationMs` milliseconds. */
export function sleep(durationMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, durationMs));
}

function describeFetchError(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    if (cause instanceof Error) return `${error.message}: ${cause.message}`;
    return error.message;
  }
  return String(error);
}
