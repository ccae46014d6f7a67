/**
 * The storm's HTTP client: a plain node:http POST with a keep-alive agent per app instance and a hard per-request
 * timeout. It never throws for a network failure or a timeout: both are outcomes the storm records (a client that
 * timed out does not know whether its request ran, which is exactly the case the ledger must survive).
 */
import { Agent, request } from "node:http";

/** What one request ended with, as a client sees it. */
export type HttpOutcome =
  | {
      readonly kind: "response";
      readonly status: number;
      /** The body text exactly as received (UTF-8). */
      readonly body: string;
      /** `Idempotent-Replayed: true` was present (contract section 3). */
      readonly replayed: boolean;
      /** `Retry-After` in seconds when present (409 request_in_progress). */
      readonly retryAfterS: number | null;
    }
  | { readonly kind: "timeout" }
  | { readonly kind: "network"; readonly code: string };

/**
 * Longest response body read, in bytes. Every answer of this API is well under 2 KiB; 256 KiB only stops a broken
 * server from filling the storm's memory.
 */
const BODY_BYTES_MAX = 256 * 1024;

/**
 * Sockets per instance: 1024. The storm keeps at most two requests per simulated user in flight (a double submit),
 * so 2000 users at the flag's maximum never queue inside the client, where a queued request would time out
 * without having reached the server.
 */
const SOCKETS_PER_INSTANCE_MAX = 1024;

/** A keep-alive connection pool for one base URL. */
export function createAgent(): Agent {
  return new Agent({ keepAlive: true, maxSockets: SOCKETS_PER_INSTANCE_MAX });
}

/**
 * Sends `POST <baseUrl><path>` with a JSON body and a bearer token, on `agent`.
 *
 * `timeoutMs` bounds the whole exchange (connect, send, full answer). Returns the response, `timeout`, or
 * `network` with the error code (ECONNREFUSED while an instance is down, ECONNRESET when it is killed mid-request).
 * Never rejects.
 */
export function postJson(
  agent: Agent,
  baseUrl: string,
  path: string,
  token: string,
  body: string,
  timeoutMs: number,
): Promise<HttpOutcome> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: HttpOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const url = new URL(path, baseUrl);
    const req = request(
      {
        agent,
        method: "POST",
        hostname: url.hostname,
        port: url.port,
        path: url.pathname,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on("data", (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes <= BODY_BYTES_MAX) chunks.push(chunk);
        });
        res.on("end", () => {
          const retryAfter = res.headers["retry-after"];
          finish({
            kind: "response",
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString("utf8"),
            replayed: res.headers["idempotent-replayed"] === "true",
            retryAfterS: typeof retryAfter === "string" && /^\d+$/.test(retryAfter) ? Number(retryAfter) : null,
          });
        });
        res.on("error", (error: NodeJS.ErrnoException) =>
          finish({ kind: "network", code: error.code ?? error.message }),
        );
      },
    );
    const timer = setTimeout(() => {
      finish({ kind: "timeout" });
      req.destroy();
    }, timeoutMs);
    req.on("error", (error: NodeJS.ErrnoException) => finish({ kind: "network", code: error.code ?? error.message }));
    req.end(body);
  });
}

/**
 * `GET <url>` returning the parsed JSON body, or null on any failure (used for health probes and the sandbox
 * bank's controls). `timeoutMs` bounds the exchange.
 */
export async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) {
      await response.arrayBuffer().catch(() => undefined);
      return null;
    }
    return (await response.json()) as unknown;
  } catch {
    return null;
  }
}

/** `POST <url>` with a JSON body (the sandbox bank's controls); returns the parsed answer or null on any failure. */
export async function postControl(url: string, value: unknown, timeoutMs: number): Promise<unknown> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(value),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) {
      await response.arrayBuffer().catch(() => undefined);
      return null;
    }
    return (await response.json()) as unknown;
  } catch {
    return null;
  }
}
