/**
 * The burst check (docs/benchmarks.md, "Bounding the heap"): does the app, started as `npm run bench` and `npm start`
 * start it (scripts/lib/stack.ts `spawnApp`, with its heap bound), survive a burst of ten times the bench's
 * connections, and how high does its resident set go? A heap bound turns a live set larger than the bound into an
 * out-of-memory crash, so the bound is only worth having if a burst well past the bench's load stays under it.
 *
 *   node --import tsx bench/burst.ts [--connections N] [--seconds N] [--storm N]
 *
 * Starts a throwaway stack on 127.0.0.1 as bench/run.ts does (embedded PostgreSQL, redis-server, the sandbox bank,
 * `next start`), with 1000 funded users, then two bursts with autocannon:
 *  1. `--connections` keep-alive connections (default 320: ten times the bench's 32) for `--seconds` (default 20),
 *     fresh payments and top-ups in turn, spread over the users;
 *  2. `--storm` connections at once (default 10,000: ten times the bench's 1000-request storms), one fresh payment or
 *     top-up each: every request in flight at the same moment, most of them queued for a database connection.
 * The app's VmRSS is sampled every 100 ms during each burst. After each one it reports the peak RSS (VmHWM), the
 * answers, and whether the app survived: its process is alive and `GET /api/v1/health/live` answers 200. When the app
 * died, the end of its log (where V8 reports "heap out of memory") is printed.
 *
 * The heap bound is the app's setting (APP_HEAP_MB, lib/env.ts): `APP_HEAP_MB=0 node --import tsx bench/burst.ts`
 * checks the app without it. Everything runs on 127.0.0.1 and stops at the end, on errors, on Ctrl-C, and after a
 * 15-minute bound. Exit codes: 0 the app survived every burst; 1 it did not; 2 the check could not run.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import pg from "pg";
import { exitWithHelpIfAsked } from "../scripts/lib/cli-help";
import { runCleanups } from "../scripts/lib/processes";
import { appHeapNodeArgs, childEnvironment, ensureBuilt, LOAD_OPS_PER_MINUTE, startStack } from "../scripts/lib/stack";
import { createHttpUsers, type HttpUser } from "./http-users";
import { appGroupMemory } from "./process-memory";
import { renderTable } from "./report";

/** The bench's keep-alive connections (bench/run.ts HTTP_CONNECTIONS) and its storms' (DUPLICATE_STORM_REQUESTS). */
const BENCH_CONNECTIONS = 32;
const BENCH_STORM_CONNECTIONS = 1000;
/** Ten times each: the burst an operator should expect to survive without resizing the container. */
const BURST_FACTOR = 10;
/** Users the load is spread over, as in bench/run.ts. */
const USERS = 1000;
/** Default length of the keep-alive burst: 20 s, past the bench's own 10 s windows. */
const DEFAULT_SECONDS = 20;
/** How often VmRSS is sampled during a burst: 100 ms catches a peak that a storm builds over seconds. */
const SAMPLE_MS = 100;
/**
 * Autocannon's per-request timeout: 60 s. 10,000 requests queued on 2 cores for a pool of 20 database connections
 * take tens of seconds to drain; a request still unanswered after a minute means the app is stuck or gone.
 */
const REQUEST_TIMEOUT_S = 60;
/** How long the app gets to answer its liveness route after a burst: 30 s, while its queue still drains. */
const LIVE_TIMEOUT_MS = 30_000;
/** Whole-check bound: 15 minutes (a run takes 2-4); past it something is stuck and the check stops itself. */
const WALL_MS_MAX = 15 * 60_000;
/** Lines of the app's log printed when it died: V8's out-of-memory report and its stack fit in 40. */
const LOG_TAIL_LINES = 40;

const say = (line: string) => process.stderr.write(`${line}\n`);

/** What one burst did, and the app's memory and state after it. */
interface BurstResult {
  readonly name: string;
  readonly connections: number;
  readonly requests: number;
  readonly statuses: string;
  readonly errors: number;
  readonly timeouts: number;
  readonly sampledRssMaxMiB: number;
  readonly peakRssMiB: number | null;
  readonly survived: boolean;
}

/** VmRSS of `pid` in MiB, or null when it is gone. */
function rssMiB(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Math.round(Number(match[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** True when `GET <appUrl>/api/v1/health/live` answers 200 within {@link LIVE_TIMEOUT_MS}. */
async function answersLive(appUrl: string): Promise<boolean> {
  const deadline = Date.now() + LIVE_TIMEOUT_MS;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${appUrl}/api/v1/health/live`, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      if (response.status === 200) return true;
    } catch {
      // Not answering yet (or gone): try again until the deadline.
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return false;
}

/**
 * Runs autocannon against the app with `connections` connections, for `durationS` seconds or `amount` requests,
 * alternating fresh payments and top-ups over `users`, while sampling the app's RSS; then reads its peak and checks
 * that it is alive.
 */
async function burst(options: {
  name: string;
  appUrl: string;
  pid: number;
  users: readonly HttpUser[];
  tag: string;
  connections: number;
  durationS?: number;
  amount?: number;
}): Promise<BurstResult> {
  const { appUrl, pid, users, tag } = options;
  let sequence = 0;
  let sampledMax = rssMiB(pid) ?? 0;
  const sampler = setInterval(() => {
    sampledMax = Math.max(sampledMax, rssMiB(pid) ?? 0);
  }, SAMPLE_MS);
  say(`burst: ${options.name}: ${options.connections} connections`);
  try {
    const result = await autocannon({
      url: appUrl,
      connections: options.connections,
      pipelining: 1,
      timeout: REQUEST_TIMEOUT_S,
      ...(options.amount === undefined ? { duration: options.durationS } : { amount: options.amount }),
      requests: [
        {
          method: "POST",
          setupRequest: (request) => {
            const n = sequence++;
            const user = users[n % users.length]!;
            const [path, body] =
              n % 2 === 0
                ? ["/api/v1/payments", `{"orderId":"burst-${tag}-${n}","amount":1}`]
                : ["/api/v1/topups", `{"refId":"burst-${tag}-${n}","amount":100}`];
            return {
              ...request,
              method: "POST",
              path,
              body,
              headers: { "content-type": "application/json", authorization: `Bearer ${user.token}` },
            };
          },
        },
      ],
    });
    const statuses = Object.entries(result.statusCodeStats ?? {})
      .map(([code, stats]) => `${code}x${(stats as { count: number }).count}`)
      .join(" ");
    const survived = rssMiB(pid) !== null && (await answersLive(appUrl));
    const peak = appGroupMemory(Number(new URL(appUrl).port)).find((member) => member.pid === pid);
    return {
      name: options.name,
      connections: options.connections,
      requests: result.requests.total,
      statuses: statuses || "none",
      errors: result.errors,
      timeouts: result.timeouts,
      sampledRssMaxMiB: sampledMax,
      peakRssMiB: peak?.peakRssMiB ?? null,
      survived,
    };
  } finally {
    clearInterval(sampler);
  }
}

const HELP = `usage: node --import tsx bench/burst.ts [--connections N] [--seconds N] [--storm N]

Starts the app as the bench does and sends two bursts at 10x the bench's connections: --connections keep-alive
connections (default 320) for --seconds (default 20), then --storm connections at once with one request each
(default 10000). Reports the app's peak RSS and whether it survived. 127.0.0.1 only; stops by itself.
Exit codes: 0 the app survived; 1 it did not; 2 the check could not run.`;

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  let connections: number;
  let seconds: number;
  let storm: number;
  try {
    const { values } = parseArgs({
      args: process.argv.slice(2),
      strict: true,
      options: { connections: { type: "string" }, seconds: { type: "string" }, storm: { type: "string" } },
    });
    connections = Number(values.connections ?? BURST_FACTOR * BENCH_CONNECTIONS);
    seconds = Number(values.seconds ?? DEFAULT_SECONDS);
    storm = Number(values.storm ?? BURST_FACTOR * BENCH_STORM_CONNECTIONS);
    // 20,000 connections at most: the file-descriptor limit of these machines (ulimit -n) is 20,000 per process.
    for (const [name, value, max] of [
      ["--connections", connections, 20_000],
      ["--seconds", seconds, 300],
      ["--storm", storm, 20_000],
    ] as const)
      if (!Number.isInteger(value) || value < 1 || value > max)
        throw new Error(`${name} takes a whole number in 1..${max}`);
  } catch (error) {
    say(`${error instanceof Error ? error.message : String(error)}\n${HELP}`);
    return 2;
  }
  const watchdog = setTimeout(() => {
    say("burst: exceeded its time bound; stopping");
    void runCleanups().finally(() => process.exit(2));
  }, WALL_MS_MAX);
  watchdog.unref();

  ensureBuilt();
  say("burst: starting PostgreSQL, Redis, the sandbox bank and the app");
  // The bench's settings (bench/run.ts): warnings only, no per-user operation limit, a ceiling no top-up reaches, and
  // as many webhook deliveries at once as the bench's load has connections.
  const stack = await startStack({
    withApp: true,
    label: "bench-burst",
    env: {
      LOG_LEVEL: "warn",
      OPS_PER_MINUTE: LOAD_OPS_PER_MINUTE,
      MAX_BALANCE_MINOR: String(2 ** 52),
      BANK_WEBHOOK_CONCURRENCY: String(BENCH_CONNECTIONS),
    },
  });
  // Two connections: the users' three inserts.
  const db = new pg.Pool({ connectionString: stack.databaseUrl, max: 2 });
  db.on("error", () => {});
  try {
    const appUrl = stack.appUrl!;
    const server = appGroupMemory(Number(new URL(appUrl).port)).find((member) => member.name.startsWith("next-server"));
    if (!server) throw new Error("burst: next-server not found");
    const tag = Date.now().toString(36);
    const users = await createHttpUsers(db, USERS, tag);
    const results: BurstResult[] = [];
    results.push(
      await burst({
        name: `keep-alive, ${seconds} s`,
        appUrl,
        pid: server.pid,
        users,
        tag: `${tag}k`,
        connections,
        durationS: seconds,
      }),
    );
    if (results.every((result) => result.survived))
      results.push(
        await burst({
          name: "one request per connection, all at once",
          appUrl,
          pid: server.pid,
          users,
          tag: `${tag}s`,
          connections: storm,
          amount: storm,
        }),
      );
    const survived = results.every((result) => result.survived);
    const out: string[] = [];
    // What spawnApp gave the app (next-server renames its process title, so /proc/<pid>/cmdline no longer shows it).
    const heapArgs = appHeapNodeArgs(childEnvironment()).join(" ") || "none (V8's defaults)";
    out.push(
      `burst check: next-server pid ${server.pid}, heap options ${heapArgs}, NODE_OPTIONS ${process.env.NODE_OPTIONS ?? "unset"}`,
    );
    out.push(
      renderTable(
        [
          "burst",
          "connections",
          "requests",
          "statuses",
          "errors",
          "timeouts",
          "max sampled RSS MiB",
          "peak RSS MiB",
          "survived",
        ],
        results.map((result) => [
          result.name,
          String(result.connections),
          String(result.requests),
          result.statuses,
          String(result.errors),
          String(result.timeouts),
          String(result.sampledRssMaxMiB),
          result.peakRssMiB === null ? "n/a (gone)" : String(result.peakRssMiB),
          result.survived ? "yes" : "NO",
        ]),
      ),
    );
    if (!survived) {
      const log = readFileSync(join(stack.logDir, "app.log"), "utf8").split("\n");
      out.push("", `the app did not survive; the end of its log (${join(stack.logDir, "app.log")}):`);
      out.push(...log.slice(-LOG_TAIL_LINES));
    }
    process.stdout.write(`${out.join("\n")}\n`);
    return survived ? 0 : 1;
  } finally {
    await db.end().catch(() => {});
    await stack.stop();
  }
}

main()
  .catch((error: unknown) => {
    say(`burst could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 2;
  })
  .then((code) => process.exit(code));
