/**
 * The duplicate storm: N identical requests sent at once, each on its own
 * connection. Exactly one may do the work; every other one must wait for it and replay its stored response
 * (contract sections 1 and 3), so the checks are: one ledger row, every answer byte-identical, and the latency
 * percentiles of the whole crowd.
 */
import { Agent, request } from "node:http";
import { percentile } from "./stats";

export interface DuplicateStormFigures {
  readonly requests: number;
  /** Counts per status (or "error"/"timeout"). */
  readonly statuses: Record<string, number>;
  /** Distinct bodies among the stored answers (2xx and 402): 1 when every answer is identical. */
  readonly distinctStoredBodies: number;
  readonly replayed: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  readonly maxMs: number | null;
  readonly wallMs: number;
}

/**
 * A duplicate may wait up to IDEMPOTENCY_WAIT_MS (3 s) for the winner and then answer 409; 15 s is far beyond
 * that plus queueing for 1000 requests, so only a stalled server times out.
 */
const REQUEST_TIMEOUT_MS = 15_000;

/**
 * Sends `count` identical `POST <appUrl><path>` requests (same token, same body) at the same moment, one connection
 * each, and waits for all of them. Returns status counts, how many distinct bodies the stored answers had, and the
 * latency percentiles (each request timed from its own send). Never rejects for HTTP failures (counted).
 */
export async function duplicateStorm(options: {
  appUrl: string;
  path: string;
  token: string;
  body: string;
  count: number;
  /** Per-request timeout (default {@link REQUEST_TIMEOUT_MS}); longer on a machine shared with other work. */
  timeoutMs?: number;
}): Promise<DuplicateStormFigures> {
  // No keep-alive and no socket limit: every request opens its own connection, as N separate clients would.
  const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const url = new URL(options.path, options.appUrl);
  const statuses: Record<string, number> = {};
  const storedBodies = new Set<string>();
  const latencies: number[] = [];
  let replayed = 0;
  const startedMs = performance.now();
  await Promise.all(
    Array.from(
      { length: options.count },
      () =>
        new Promise<void>((resolve) => {
          const t0 = performance.now();
          const done = (label: string) => {
            statuses[label] = (statuses[label] ?? 0) + 1;
            latencies.push(performance.now() - t0);
            resolve();
          };
          const req = request(
            {
              agent,
              method: "POST",
              hostname: url.hostname,
              port: url.port,
              path: url.pathname,
              timeout: options.timeoutMs ?? REQUEST_TIMEOUT_MS,
              headers: {
                authorization: `Bearer ${options.token}`,
                "content-type": "application/json",
                "content-length": Buffer.byteLength(options.body),
              },
            },
            (res) => {
              const chunks: Buffer[] = [];
              res.on("data", (chunk: Buffer) => chunks.push(chunk));
              res.on("end", () => {
                const status = res.statusCode ?? 0;
                if ((status >= 200 && status < 300) || status === 402)
                  storedBodies.add(Buffer.concat(chunks).toString("utf8"));
                if (res.headers["idempotent-replayed"] === "true") replayed += 1;
                done(String(status));
              });
              res.on("error", () => done("error"));
            },
          );
          req.on("timeout", () => req.destroy(new Error("timeout")));
          req.on("error", (error) => done(error.message === "timeout" ? "timeout" : "error"));
          req.end(options.body);
        }),
    ),
  );
  const wallMs = performance.now() - startedMs;
  agent.destroy();
  return {
    requests: options.count,
    statuses,
    distinctStoredBodies: storedBodies.size,
    replayed,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: percentile(latencies, 100),
    wallMs,
  };
}
