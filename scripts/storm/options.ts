/**
 * Command-line options of `npm run storm`. Everything the storm touches is on this machine:
 * every URL given with a flag must name 127.0.0.1, localhost or ::1, or the storm refuses to start.
 */
import { parseArgs } from "node:util";

/** What the storm runs against: services it starts itself, or services given by URL (then no crashes are staged). */
export type StormTarget =
  | { readonly kind: "own" }
  | {
      readonly kind: "given";
      /** Two (or more) base URLs of `next start` instances sharing one database and Redis. */
      readonly appUrls: readonly string[];
      readonly databaseUrl: string;
      readonly bankUrl: string;
      /** Optional: the reward-cap audit compares Redis counters only when it can reach Redis. */
      readonly redisUrl: string | null;
    };

export interface StormOptions {
  /** Simulated users, each with its own API token and wallet. */
  readonly users: number;
  /** Length of the traffic phase in seconds (setup, drain, reconcile and audit come on top). */
  readonly durationS: number;
  /** Seed of the traffic's random choices and of the bank's fault draws (reproducible runs). */
  readonly seed: number;
  readonly short: boolean;
  /**
   * `--cluster`: run against `npm run cluster`'s topology (Patroni, HAProxy, Redis Cluster, three app
   * instances) and inject its three faults instead of the single-machine crashes. `--short` with it: one app
   * instance, shorter traffic (the version `npm test` runs when the apt packages are present).
   */
  readonly cluster: boolean;
  /** `--pooler` with `--cluster`: PgBouncer in transaction pooling between HAProxy and the app. */
  readonly pooler: boolean;
  /**
   * Negative control: after the reconciler and before the checks, corrupt the storm's own database on purpose (one
   * wallet credited without a ledger row, one stored response altered), so the run must end with violations and
   * exit 1. Shows that the checks bite. Own services only.
   */
  readonly negativeControl: boolean;
  readonly target: StormTarget;
}

/**
 * Default users: 200. Each user is one "person" doing one operation at a time (plus the
 * duplicates of that operation), so 200 users keep a few hundred requests in flight at the peak, which is what two
 * `next start` instances, PostgreSQL and the bank can serve on 2 cores without queueing for seconds.
 */
export const DEFAULT_USERS = 200;

/**
 * Default traffic phase: 110 s. Setup (~10 s with a current build), the drain and lease wait (~10 s) and the
 * reconciler and audit (~5 s) come on top, so a full run ends in about 2.5 minutes: under 3 minutes on 2 cores, with
 * room for a slower machine.
 */
export const DEFAULT_DURATION_S = 110;

/** `--short` (CI): 40 users for 18 s of traffic, so the whole run takes about 30-40 s including start-up. */
export const SHORT_USERS = 40;
export const SHORT_DURATION_S = 18;

/**
 * `--cluster`: 150 users for 90 s. Three faults happen in the traffic phase, the PostgreSQL one taking up to ~20 s
 * of write outage; 90 s leaves traffic before, between and after them. 150 users (not 200): three instances,
 * three PostgreSQL nodes, six Redis nodes, etcd and HAProxy share the same 2 cores.
 */
export const CLUSTER_USERS = 150;
export const CLUSTER_DURATION_S = 90;
/** `--cluster --short` (inside `npm test`): 30 users for 60 s on one app instance. */
export const CLUSTER_SHORT_USERS = 30;
export const CLUSTER_SHORT_DURATION_S = 60;

/**
 * Upper bounds on the flags, so that a typo cannot start an unbounded run: 2000 users (ten times the default;
 * beyond it PostgreSQL's 100 connections and the machine's 2 cores are the limit, not the storm) and 30 minutes.
 */
export const USERS_MAX = 2000;
export const DURATION_S_MAX = 1800;
/**
 * Lower bound on the traffic phase: 10 s. The crash of one app instance is staged at 35% of the phase and it
 * needs ~2-3 s to come back; a shorter phase would end before the restarted instance served anything.
 */
export const DURATION_S_MIN = 10;

export const USAGE = `usage: npm run storm -- [--short] [--cluster [--pooler]] [--users N] [--duration SECONDS] [--seed N] [--negative-control]
                     [--app-url URL --app-url URL --database-url URL --bank-url URL [--redis-url URL]]

  --short           CI mode: ${SHORT_USERS} users, ${SHORT_DURATION_S} s of traffic (~30 s in all)
  --users N         simulated users (default ${DEFAULT_USERS}, at most ${USERS_MAX})
  --duration S      seconds of traffic (default ${DEFAULT_DURATION_S}, ${DURATION_S_MIN}..${DURATION_S_MAX})
  --seed N          seed for the traffic and the bank's fault draws (default: random, printed)
  --negative-control  corrupt the storm's own database before the checks: the run must fail (exit 1)
  --cluster         run on npm run cluster's topology (Patroni, HAProxy, Redis Cluster, 3 instances) and inject
                    its faults: primary node lost, Redis lagging-replica failover, an app instance killed
                    (default ${CLUSTER_USERS} users, ${CLUSTER_DURATION_S} s; with --short: 1 instance, ${CLUSTER_SHORT_USERS} users, ${CLUSTER_SHORT_DURATION_S} s)
  --pooler          with --cluster: PgBouncer in transaction pooling between HAProxy and the app
  --app-url URL     target a running app instance instead of starting two (give it twice); needs
                    --database-url and --bank-url (a sandbox bank); crashes are then not staged.
All URLs must point at 127.0.0.1, localhost or ::1.`;

/** A flag the storm cannot accept; `npm run storm` prints it with the usage and exits 2. */
export class StormUsageError extends Error {
  override readonly name = "StormUsageError";
}

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/**
 * Throws {@link StormUsageError} unless `url` is an http(s)/postgres/redis URL on this machine. The storm creates
 * users, moves money and kills processes: it must never be pointed at another host by a stray flag.
 */
export function assertLoopbackUrl(flag: string, url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new StormUsageError(`${flag}: not a URL: ${url}`);
  }
  if (!LOOPBACK_HOSTS.has(parsed.hostname)) {
    throw new StormUsageError(
      `${flag}: ${parsed.hostname} is not this machine; only 127.0.0.1, localhost or ::1 are allowed`,
    );
  }
  return url.replace(/\/+$/, "");
}

function integerFlag(flag: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new StormUsageError(`${flag} takes a whole number, got '${raw}'`);
  const value = Number(raw);
  if (value < min || value > max) throw new StormUsageError(`${flag} must be in ${min}..${max}, got ${value}`);
  return value;
}

/**
 * Parses `argv` (without `node` and the script). Returns the options with defaults applied (a random 32-bit seed
 * when none is given). Throws {@link StormUsageError} on an unknown flag, a value out of bounds, a non-loopback
 * URL, or an incomplete set of target URLs.
 */
export function parseStormOptions(argv: readonly string[], randomSeed: () => number): StormOptions {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        short: { type: "boolean" },
        users: { type: "string" },
        duration: { type: "string" },
        seed: { type: "string" },
        "negative-control": { type: "boolean" },
        cluster: { type: "boolean" },
        pooler: { type: "boolean" },
        "app-url": { type: "string", multiple: true },
        "database-url": { type: "string" },
        "bank-url": { type: "string" },
        "redis-url": { type: "string" },
        help: { type: "boolean" },
      },
    }));
  } catch (error) {
    throw new StormUsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) throw new StormUsageError("help requested");
  const short = values.short ?? false;
  const cluster = values.cluster ?? false;
  const pooler = values.pooler ?? false;
  if (pooler && !cluster) throw new StormUsageError("--pooler only works with --cluster");
  const defaultUsers = cluster ? (short ? CLUSTER_SHORT_USERS : CLUSTER_USERS) : short ? SHORT_USERS : DEFAULT_USERS;
  const defaultDurationS = cluster
    ? short
      ? CLUSTER_SHORT_DURATION_S
      : CLUSTER_DURATION_S
    : short
      ? SHORT_DURATION_S
      : DEFAULT_DURATION_S;
  const users = integerFlag("--users", values.users, defaultUsers, 2, USERS_MAX);
  const durationS = integerFlag("--duration", values.duration, defaultDurationS, DURATION_S_MIN, DURATION_S_MAX);
  const seed = integerFlag("--seed", values.seed, randomSeed(), 0, 2 ** 32 - 1);
  const negativeControl = values["negative-control"] ?? false;

  const appUrls = values["app-url"] ?? [];
  const anyTargetFlag = appUrls.length > 0 || values["database-url"] || values["bank-url"] || values["redis-url"];
  if (!anyTargetFlag)
    return { users, durationS, seed, short, cluster, pooler, negativeControl, target: { kind: "own" } };
  if (cluster) throw new StormUsageError("--cluster starts its own topology: it takes no target URLs");
  // Never corrupt a database the storm did not create.
  if (negativeControl) throw new StormUsageError("--negative-control only works on services the storm starts itself");

  if (appUrls.length < 2)
    throw new StormUsageError("--app-url must be given twice (two instances sharing one database)");
  if (!values["database-url"] || !values["bank-url"]) {
    throw new StormUsageError("targeting running services needs --database-url and --bank-url as well as --app-url");
  }
  return {
    users,
    durationS,
    seed,
    short,
    cluster,
    pooler,
    negativeControl,
    target: {
      kind: "given",
      appUrls: appUrls.map((url) => assertLoopbackUrl("--app-url", url)),
      databaseUrl: assertLoopbackUrl("--database-url", values["database-url"]),
      bankUrl: assertLoopbackUrl("--bank-url", values["bank-url"]),
      redisUrl: values["redis-url"] ? assertLoopbackUrl("--redis-url", values["redis-url"]) : null,
    },
  };
}
