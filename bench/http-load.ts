/**
 * HTTP load with autocannon: a fixed number of connections against one route of the
 * built app for a fixed time, with a per-request body and token chosen by a generator (fresh keys, or keys whose
 * response is already stored). Returns requests/s and latency percentiles as autocannon measured them.
 */
import autocannon from "autocannon";

/** What one load run measured. */
export interface HttpFigures {
  readonly requestsPerS: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly total: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  /** Counts per status code, e.g. { "201": 12000 }. */
  readonly statuses: Record<string, number>;
}

/** The body and bearer token of the next request. */
export type RequestGenerator = () => { body: string; token: string | null };

/**
 * A request that takes longer than 10 s is counted as a timeout by autocannon; the slowest legitimate answer here
 * (a top-up waiting on the bank) takes well under a second, so only a stalled server reaches it.
 */
const REQUEST_TIMEOUT_S = 10;

/**
 * Loads `POST <appUrl><path>` with `connections` keep-alive connections (one request in flight each, no pipelining:
 * what a pool of clients does) for `durationS` seconds. Every request's body and token come from `next()`.
 * Resolves with the figures; rejects when autocannon cannot start.
 */
export async function loadRoute(options: {
  appUrl: string;
  path: string;
  connections: number;
  durationS: number;
  next: RequestGenerator;
}): Promise<HttpFigures> {
  const result = await autocannon({
    url: `${options.appUrl}${options.path}`,
    connections: options.connections,
    pipelining: 1,
    duration: options.durationS,
    timeout: REQUEST_TIMEOUT_S,
    requests: [
      {
        method: "POST",
        setupRequest: (request) => {
          const { body, token } = options.next();
          const headers: Record<string, string> = { "content-type": "application/json" };
          if (token) headers.authorization = `Bearer ${token}`;
          return { ...request, method: "POST", path: options.path, body, headers };
        },
      },
    ],
  });
  const statuses: Record<string, number> = {};
  for (const [code, stats] of Object.entries(result.statusCodeStats ?? {}))
    statuses[code] = (stats as { count: number }).count;
  return {
    requestsPerS: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses,
  };
}
