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

/** How a route was warmed up before it was measured ({@link warmUntilSteady}). */
export interface WarmUp {
  /** Requests/s of each warm-up window, in order. */
  readonly windowsRps: readonly number[];
  /** Whether the last window stopped rising; false when the window limit ended the warm-up first. */
  readonly steady: boolean;
}

/** A warm-up window: 4 s (2 s windows swung by 20% on these machines, which ended warm-ups too early). */
const WARMUP_WINDOW_S = 4;
/** A window more than 5% above every earlier one is still warming up (run-to-run noise here is about 5%). */
const WARMUP_RISE_MAX = 0.05;
/** At least three windows (12 s): a route's first seconds are its slowest, and one lucky window proves nothing. */
const WARMUP_WINDOWS_MIN = 3;
/**
 * At most 10 windows (40 s). A route's first ~20 s on these machines run at 60-80% of its steady rate (a fresh
 * payment path measured 304, 304, then 476 requests/s in consecutive 10 s runs; docs/benchmarks.md "Warm-up");
 * 40 s covers that with room, and bounds the run when a route never settles.
 */
const WARMUP_WINDOWS_MAX = 10;

/**
 * Loads the route as {@link loadRoute} does, in 4 s windows, until it is in steady state: at least three windows,
 * and the last one no more than 5% above the best before it (its rate stopped rising), or ten windows. What the first
 * requests of a route cost (V8 compiling its code, pools and caches filling, the machine's first touches of the
 * memory the process grows into) is not what the route costs, and a fixed short warm-up measured it (case C25's
 * note: the bench must not measure warm-up artefacts). Returns each window's requests/s; rejects as loadRoute does.
 */
export async function warmUntilSteady(options: Omit<Parameters<typeof loadRoute>[0], "durationS">): Promise<WarmUp> {
  const windowsRps: number[] = [];
  while (windowsRps.length < WARMUP_WINDOWS_MAX) {
    const { requestsPerS } = await loadRoute({ ...options, durationS: WARMUP_WINDOW_S });
    const bestBefore = windowsRps.length > 0 ? Math.max(...windowsRps) : 0;
    windowsRps.push(requestsPerS);
    if (windowsRps.length >= WARMUP_WINDOWS_MIN && requestsPerS <= bestBefore * (1 + WARMUP_RISE_MAX))
      return { windowsRps, steady: true };
  }
  return { windowsRps, steady: false };
}
