/**
 * A whole local stack for tests and CI: embedded PostgreSQL (migrated), redis-server, and optionally the sandbox
 * bank and the built Next.js app, all on 127.0.0.1 and free ports, all stopped by `stop()` (or by the signal and
 * exit hooks of ./processes.ts if the script is interrupted).
 *
 * `npm test` starts one stack and hands it to every suite through the `TEST_STACK` environment variable
 * (JSON, see {@link TestStackInfo}); a suite started on its own starts its own.
 */
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  appendFileSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseEnv } from "../../lib/env";
import { migrate } from "../../lib/migrate";
import {
  embeddedPostgresRoot,
  startEmbeddedPostgres,
  stopOrphanedPostgres,
  type EmbeddedPostgres,
} from "./embedded-postgres";
import { freePort, waitForHttp } from "./ports";
import {
  isProcessRunning,
  killRecordedGroup,
  recordGroup,
  registerCleanup,
  signalGroup,
  spawnService,
  type GroupRecord,
  type Service,
  type ServiceExit,
} from "./processes";
import { startMailCatcher } from "./mail-catcher";
import { startRedisServer, type RedisServer } from "./redis-server";
import { randomAuthSecret, randomWebhookSecret } from "./secrets";

/** The project root (two levels above scripts/lib). */
// `__filename`, not `import.meta.url`: this file is loaded by tsx, vitest and Playwright's CommonJS transform,
// and `import.meta` makes Playwright load it as an ES module, which then fails. (`__dirname` is wrong under
// tsx's ESM mode; `__filename` is right everywhere.)
export const projectRoot = realpathSync(resolve(dirname(__filename), "..", ".."));

/** What a running stack offers, and exactly what `TEST_STACK` carries as JSON. */
export interface TestStackInfo {
  /** `postgres://...@127.0.0.1:<port>/wallet`, migrated. */
  databaseUrl: string;
  /** `redis://127.0.0.1:<port>` */
  redisUrl: string;
  /** PID of redis-server, for tests that stall it with SIGSTOP/SIGCONT (docs/development.md note 20). */
  redisPid: number;
  /** `http://127.0.0.1:<port>` of the built app; null when the stack was started without it. */
  appUrl: string | null;
  /** `http://127.0.0.1:<port>` of the sandbox bank; null when the stack was started without the app. */
  bankUrl: string | null;
  /** The `BANK_WEBHOOK_SECRETS` value the app and bank were started with (tests sign webhooks with it). */
  webhookSecrets: string;
  /** The mail catcher's `smtp://127.0.0.1:<port>` (the app's SMTP_URL); null when the stack was started without the app. */
  smtpUrl: string | null;
  /** The mail catcher's `http://127.0.0.1:<port>` (its API: `/email`); null without the app. */
  mailInboxUrl: string | null;
}

export interface Stack extends TestStackInfo {
  webhookSecrets: string;
  /** Folder holding postgres.log, redis.log, bank.log and app.log of this stack. */
  logDir: string;
  /** Stops app, bank, Redis and PostgreSQL, and deletes the stack's temporary data. Safe to call twice. */
  stop(): Promise<void>;
}

export interface StartStackOptions {
  /** Start the sandbox bank and the built app too (the app must be built: see {@link ensureBuilt}). */
  withApp: boolean;
  /** Ports on 127.0.0.1; default: free ones. */
  appPort?: number;
  bankPort?: number;
  /** Extra environment for the app and the bank, applied last (e.g. `{ IDEMPOTENCY_WAIT_MS: "500" }`). */
  env?: Record<string, string>;
  /**
   * Names the log folder `reports/stack-logs/<label>` (emptied at start; `<label>-<pid>` when a live process
   * already uses it) and the temporary folder. Default "stack".
   */
  label?: string;
}

/** Environment of any service value: strings, or undefined to leave a variable out. */
type ServiceEnv = Record<string, string | undefined>;

/**
 * Spawns the sandbox bank (`node --import tsx bank/main.ts`) in its own process group. `env` is its whole
 * environment (BANK_PORT, APP_URL, BANK_WEBHOOK_SECRETS, BANK_STATE_FILE, fault settings...); `log` as in
 * spawnService; `nodeArgs` go before the script (e.g. `--cpu-prof`); `root` is the checkout whose bank runs
 * (default this one; the bank benchmark compares two). Readiness is the caller's business (`GET /health`).
 */
export function spawnBank(options: {
  name?: string;
  env: ServiceEnv;
  log?: string;
  nodeArgs?: string[];
  root?: string;
}): Service {
  return spawnService({
    name: options.name ?? "bank",
    command: process.execPath,
    args: [...(options.nodeArgs ?? []), "--import", "tsx", "bank/main.ts"],
    cwd: options.root ?? projectRoot,
    env: { ...options.env, NODE_ENV: "production" },
    log: options.log,
  });
}

/** A sandbox bank started by {@link startBank} and ready: its service handle, port and base URL. */
export interface RunningBank extends Service {
  port: number;
  /** e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** Crash: SIGKILL the bank's process group at once, no chance to save. Resolves with its exit status. */
  kill(): Promise<ServiceExit>;
}

/**
 * Starts the sandbox bank on 127.0.0.1 for a test or a benchmark and resolves once its `GET /health` answers 200
 * (within `readyTimeoutMs`, default 60 s). `env` holds the bank's settings (bank/config.ts) on top of PATH and
 * HOME only, so a developer's shell cannot change what a test runs against; `BANK_PORT` defaults to a free port.
 * Its output stays in memory ({@link Service.recentOutput}) unless `log` names a file; `nodeArgs` and `root` as in
 * {@link spawnBank}.
 *
 * @throws Error with the end of the bank's output when it exits or is not ready in time.
 */
export async function startBank(options: {
  env: Record<string, string>;
  log?: string;
  readyTimeoutMs?: number;
  nodeArgs?: string[];
  root?: string;
}): Promise<RunningBank> {
  const port = Number(options.env.BANK_PORT ?? 0) || (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const service = spawnBank({
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...options.env, BANK_PORT: String(port) },
    log: options.log ?? "silent",
    nodeArgs: options.nodeArgs,
    root: options.root,
  });
  try {
    await waitForService(service, `${url}/health`, { timeoutMs: options.readyTimeoutMs });
  } catch (error) {
    signalGroup(service.pid, "SIGKILL");
    await service.stop();
    throw error;
  }
  const kill = async (): Promise<ServiceExit> => {
    if (!service.exitStatus()) signalGroup(service.pid, "SIGKILL");
    const exit = await service.exited;
    await service.stop();
    return exit;
  };
  return { ...service, port, url, kill };
}

/**
 * The young generation's semi-space bound given with the old generation's, in MB: 16, what V8 picks by itself on
 * this 23.5 GiB machine (its heap limit is then the old-space bound + 48 MB). V8 sizes the young generation from the
 * memory it finds (a container's limit included), so a smaller container would get smaller semi-spaces, and a
 * request's short-lived objects would be promoted to the old generation, which only full collections reclaim.
 */
const APP_SEMI_SPACE_MB = 16;

/**
 * The node options that bound the production server's V8 heap (docs/decisions/051-bounded-heap.md):
 * `--max-old-space-size=<APP_HEAP_MB>` and `--max-semi-space-size=16`, from `env`, the app's whole environment
 * (APP_HEAP_MB of lib/env.ts, default 768; 0 gives none). A bound the operator sets in the environment's NODE_OPTIONS
 * wins: the same option is then left out (an option on the command line would override NODE_OPTIONS).
 *
 * @throws EnvError when APP_HEAP_MB is not a valid setting.
 */
export function appHeapNodeArgs(env: ServiceEnv): string[] {
  const heapMb = parseEnv({ APP_HEAP_MB: env.APP_HEAP_MB }).APP_HEAP_MB;
  if (heapMb === 0) return [];
  const operatorOptions = env.NODE_OPTIONS ?? "";
  const args: string[] = [];
  if (!/--max[-_]old[-_]space[-_]size\b/.test(operatorOptions)) args.push(`--max-old-space-size=${heapMb}`);
  if (!/--max[-_]semi[-_]space[-_]size\b/.test(operatorOptions))
    args.push(`--max-semi-space-size=${APP_SEMI_SPACE_MB}`);
  return args;
}

/**
 * Spawns the built app, `next start -H <host> -p <port>` (or, with `dev`, the development server `next dev`,
 * which compiles on request and hot-reloads edited files), run by node directly so that stopping its process
 * group stops next-server too (docs/development.md note 8). `env` is its whole environment (DATABASE_URL, BANK_URL,
 * APP_URL...); NODE_ENV (production, or development with `dev`) and NEXT_TELEMETRY_DISABLED=1 are added. `host`
 * defaults to 127.0.0.1. `next start` runs with the heap bound of {@link appHeapNodeArgs} (`next dev`, whose
 * compiler needs more, without). `nodeArgs` go before the script, after the bound, so that they override it (e.g.
 * `--cpu-prof`, or another `--max-old-space-size`). `root` is the checkout whose build runs (default this one).
 * Readiness is the caller's business (`GET /api/v1/health`).
 *
 * @throws EnvError when `env` has an invalid APP_HEAP_MB.
 */
export function spawnApp(options: {
  name?: string;
  port: number;
  env: ServiceEnv;
  log?: string;
  nodeArgs?: string[];
  host?: string;
  dev?: boolean;
  root?: string;
}): Service {
  return spawnService({
    name: options.name ?? "app",
    command: process.execPath,
    args: [
      ...(options.dev ? [] : appHeapNodeArgs(options.env)),
      ...(options.nodeArgs ?? []),
      "node_modules/next/dist/bin/next",
      options.dev ? "dev" : "start",
      "-H",
      options.host ?? "127.0.0.1",
      "-p",
      String(options.port),
    ],
    cwd: options.root ?? projectRoot,
    env: {
      ...options.env,
      NODE_ENV: options.dev ? "development" : "production",
      NEXT_TELEMETRY_DISABLED: "1",
    },
    log: options.log,
  });
}

/** SIGNUPS_PER_HOUR of test stacks' apps (unless `env` overrides it): far above the sign-ups of one run. */
const TEST_STACK_SIGNUPS_PER_HOUR = "100000";

/**
 * OPS_PER_MINUTE of the storm's and the benchmarks' apps: they measure the money path under load and faults,
 * where one simulated user may start more than the contract's 60 new operations a minute. The limiter has its
 * own tests (tests/http/abuse-limits.test.ts), on apps with the default. 1,000,000 is the most lib/env.ts accepts.
 */
export const LOAD_OPS_PER_MINUTE = "1000000";

/**
 * How long the app and the bank may take to become ready. 60 s: `next start` is ready in about a second on
 * these machines, the bank faster; a first start on a cold, busy CI disk gets generous room before failing.
 */
const SERVICE_READY_TIMEOUT_MS = 60_000;

/**
 * Starts PostgreSQL (embedded, fresh temporary data folder) and redis-server, applies the migrations, and with
 * `withApp` starts the sandbox bank (`node --import tsx bank/main.ts`) and the built app
 * (`node node_modules/next/dist/bin/next start -H 127.0.0.1 -p <port>`, docs/development.md note 8), waiting for the
 * bank's `GET /health` and the app's `GET /api/v1/health` to answer 200.
 *
 * Returns the {@link Stack}. Throws after stopping whatever it had started when any step fails; the error says
 * which service failed and includes the end of its output. Does not build the app.
 */
export async function startStack(options: StartStackOptions): Promise<Stack> {
  const label = options.label ?? "stack";
  const logDir = claimLogDir(label);

  // The stack's folder goes beside the PostgreSQL binary copy, where the `postgres` user can reach its data
  // folder (note 19): <root>/stack-<label>-XXXXXX/{owner.pid, pgdata/, bank-state.json}.
  const pgRoot = embeddedPostgresRoot();
  mkdirSync(pgRoot, { recursive: true, mode: 0o755 });
  await sweepAbandonedStacks(pgRoot);
  const scratchDir = mkdtempSync(join(pgRoot, `stack-${label}-`));
  chmodSync(scratchDir, 0o755);
  writeFileSync(join(scratchDir, "owner.pid"), `${process.pid}\n`);
  const pgDataDir = join(scratchDir, "pgdata");
  // One line per service process group, so that a later run can kill them if this one is SIGKILLed.
  const remember = (pid: number) => {
    const record = recordGroup(pid);
    if (record) appendFileSync(join(scratchDir, "groups.jsonl"), `${JSON.stringify(record)}\n`);
  };

  let postgres: EmbeddedPostgres | null = null;
  let redis: RedisServer | null = null;
  const services: Service[] = [];

  const stopAll = once(async () => {
    await Promise.all(services.map((service) => service.stop()));
    await redis?.stop();
    await postgres?.stop();
    rmSync(scratchDir, { recursive: true, force: true });
  });
  const unregister = registerCleanup(stopAll);
  const stop = async () => {
    unregister();
    await stopAll();
  };

  try {
    // Both start in parallel; allSettled (not all) so that when one fails the other has finished starting
    // and is assigned, and the catch below stops it instead of leaving it running.
    const [pgResult, redisResult] = await Promise.allSettled([
      startEmbeddedPostgres({ dataDir: pgDataDir, log: join(logDir, "postgres.log") }),
      startRedisServer({ log: join(logDir, "redis.log") }),
    ]);
    if (pgResult.status === "fulfilled") postgres = pgResult.value;
    if (redisResult.status === "fulfilled") {
      redis = redisResult.value;
      remember(redis.pid);
    }
    if (pgResult.status === "rejected") throw pgResult.reason;
    if (redisResult.status === "rejected") throw redisResult.reason;
    if (!postgres || !redis) throw new Error("unreachable: both services reported started");
    await migrate(postgres.url);

    const webhookSecrets = options.env?.BANK_WEBHOOK_SECRETS ?? randomWebhookSecret();
    const base = {
      databaseUrl: postgres.url,
      redisUrl: redis.url,
      redisPid: redis.pid,
      webhookSecrets,
      logDir,
      stop,
    };
    if (!options.withApp) return { ...base, appUrl: null, bankUrl: null, smtpUrl: null, mailInboxUrl: null };

    const mail = await startMailCatcher({ mailDir: join(scratchDir, "mail"), log: join(logDir, "mail.log") });
    services.push(mail.service);
    remember(mail.service.pid);

    const [appPort, bankPort] = await Promise.all([options.appPort ?? freePort(), options.bankPort ?? freePort()]);
    const appUrl = `http://127.0.0.1:${appPort}`;
    const bankUrl = `http://127.0.0.1:${bankPort}`;
    const inherited = childEnvironment();

    const bank = spawnBank({
      env: {
        ...inherited,
        BANK_PORT: String(bankPort),
        APP_URL: appUrl,
        BANK_WEBHOOK_SECRETS: webhookSecrets,
        BANK_STATE_FILE: join(scratchDir, "bank-state.json"),
        ...options.env,
      },
      log: join(logDir, "bank.log"),
    });
    services.push(bank);
    remember(bank.pid);

    const app = spawnApp({
      port: appPort,
      env: {
        ...inherited,
        DATABASE_URL: postgres.url,
        REDIS_URL: redis.url,
        PORT: String(appPort),
        BANK_PORT: String(bankPort),
        BANK_URL: bankUrl,
        APP_URL: appUrl,
        BETTER_AUTH_URL: appUrl,
        BANK_WEBHOOK_SECRETS: webhookSecrets,
        // A fresh session-signing secret per stack (case C16).
        BETTER_AUTH_SECRET: randomAuthSecret(),
        // Every e2e and http run signs up many accounts from 127.0.0.1; the contract's 5 an hour would stop the
        // suite after five. The throttle's own tests run an app with the default (tests/http/abuse-limits.test.ts).
        SIGNUPS_PER_HOUR: TEST_STACK_SIGNUPS_PER_HOUR,
        SMTP_URL: mail.smtpUrl,
        // Tests wait for mail: a pass every 200 ms instead of every second.
        MAIL_POLL_MS: "200",
        ...options.env,
      },
      log: join(logDir, "app.log"),
    });
    services.push(app);
    remember(app.pid);

    await Promise.all([
      waitForService(bank, `${bankUrl}/health`, {}),
      waitForService(app, `${appUrl}/api/v1/health`, {}),
    ]);
    return { ...base, appUrl, bankUrl, smtpUrl: mail.smtpUrl, mailInboxUrl: mail.inboxUrl };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Returns an emptied `reports/stack-logs/<label>` marked with our PID, or `<label>-<pid>` when a live process
 * (a concurrent run with the same label) still owns the first.
 */
function claimLogDir(label: string): string {
  let logDir = join(projectRoot, "reports", "stack-logs", label);
  const ownerFile = join(logDir, "owner.pid");
  if (existsSync(ownerFile)) {
    const owner = Number(readFileSync(ownerFile, "utf8").trim());
    if (owner !== process.pid && isProcessRunning(owner)) logDir = `${logDir}-${process.pid}`;
  }
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  writeFileSync(join(logDir, "owner.pid"), `${process.pid}\n`);
  return logDir;
}

/**
 * A stack folder whose owner is gone may be left by a run that was killed with SIGKILL (no cleanup ran).
 * 10 minutes: a folder without owner.pid is only that young while its stack is being created.
 */
const UNOWNED_STACK_AGE_MS_MIN = 10 * 60_000;

/**
 * Removes stack folders of runs that died without cleaning up: their owner process is gone (or, without an
 * owner file, the folder is older than 10 minutes). The services such a run recorded (redis-server, bank, app)
 * are SIGKILLed and an orphaned PostgreSQL on its data folder is stopped first. Folders of live runs, in this
 * process or another, are left alone.
 */
async function sweepAbandonedStacks(pgRoot: string): Promise<void> {
  for (const entry of readdirSync(pgRoot, { withFileTypes: true })) {
    if (!entry.isDirectory() || !entry.name.startsWith("stack-")) continue;
    const dir = join(pgRoot, entry.name);
    let ownerPid: number | null = null;
    try {
      ownerPid = Number(readFileSync(join(dir, "owner.pid"), "utf8").trim());
    } catch {
      ownerPid = null;
    }
    if (ownerPid !== null && isProcessRunning(ownerPid)) continue;
    if (ownerPid === null && Date.now() - statSync(dir).mtimeMs < UNOWNED_STACK_AGE_MS_MIN) continue;
    try {
      for (const line of readLines(join(dir, "groups.jsonl"))) killRecordedGroup(JSON.parse(line) as GroupRecord);
      await stopOrphanedPostgres(join(dir, "pgdata"));
      rmSync(dir, { recursive: true, force: true });
    } catch (error) {
      process.stderr.write(
        `could not clean up abandoned stack ${dir}: ${error instanceof Error ? error.message : String(error)}\n`,
      );
    }
  }
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line.trim() !== "");
  } catch {
    return [];
  }
}

/**
 * Waits until `url` answers 2xx (any status with `anyStatus`) while `service` runs, for at most `timeoutMs`
 * (default 60 s). Resolves once ready. Throws as soon as the service exits, or at the deadline, with the end of the
 * service's output in the message.
 */
export async function waitForService(
  service: Service,
  url: string,
  options: { anyStatus?: boolean; timeoutMs?: number },
): Promise<void> {
  try {
    await waitForHttp(url, options.timeoutMs ?? SERVICE_READY_TIMEOUT_MS, {
      anyStatus: options.anyStatus,
      failIf: () => {
        const exit = service.exitStatus();
        return exit ? `${service.name} exited (code ${exit.code}, signal ${exit.signal})` : null;
      },
    });
    // A server already on that port would have answered too; ours must still be running to count as ready.
    const exit = service.exitStatus();
    if (exit)
      throw new Error(`${service.name} exited (code ${exit.code}, signal ${exit.signal}) although ${url} answered`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const tail = service.recentOutput().split("\n").slice(-40).join("\n");
    throw new Error(
      `${service.name} did not become ready: ${message}\n--- last output of ${service.name} ---\n${tail}`,
    );
  }
}

/**
 * The environment handed to the app, the bank and the build: ours, minus what would change their behaviour
 * behind the test's back (vitest's markers, a parent stack's description, this process's database settings,
 * which the stack sets explicitly for the app).
 */
export function childEnvironment(): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (key.startsWith("VITEST") || key === "TEST_STACK" || key === "DATABASE_URL" || key === "REDIS_URL") continue;
    environment[key] = value;
  }
  return environment;
}

/** Serialises a stack for the `TEST_STACK` environment variable. */
export function testStackJson(stack: TestStackInfo): string {
  const info: TestStackInfo = {
    databaseUrl: stack.databaseUrl,
    redisUrl: stack.redisUrl,
    redisPid: stack.redisPid,
    appUrl: stack.appUrl,
    bankUrl: stack.bankUrl,
    webhookSecrets: stack.webhookSecrets,
    smtpUrl: stack.smtpUrl,
    mailInboxUrl: stack.mailInboxUrl,
  };
  return JSON.stringify(info);
}

/**
 * Parses `TEST_STACK` (JSON `{ databaseUrl, redisUrl, redisPid, appUrl, bankUrl, webhookSecrets, smtpUrl,
 * mailInboxUrl }`).
 * Returns null when `raw` is unset or empty; throws naming the bad field when it is malformed.
 */
export function parseTestStack(raw: string | undefined): TestStackInfo | null {
  if (!raw || raw.trim() === "") return null;
  let value: Record<string, unknown>;
  try {
    value = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    throw new Error("TEST_STACK is not valid JSON");
  }
  const text = (key: string, nullable: boolean): string | null => {
    const field = value[key];
    if (typeof field === "string" && field.length > 0) return field;
    if (nullable && (field === null || field === undefined)) return null;
    throw new Error(`TEST_STACK.${key} must be a non-empty string${nullable ? " or null" : ""}`);
  };
  const redisPid = Number(value.redisPid);
  if (!Number.isInteger(redisPid) || redisPid <= 0) throw new Error("TEST_STACK.redisPid must be a positive integer");
  return {
    databaseUrl: text("databaseUrl", false)!,
    redisUrl: text("redisUrl", false)!,
    redisPid,
    appUrl: text("appUrl", true),
    bankUrl: text("bankUrl", true),
    webhookSecrets: text("webhookSecrets", false)!,
    smtpUrl: text("smtpUrl", true),
    mailInboxUrl: text("mailInboxUrl", true),
  };
}

/** Host names that mean "this machine". */
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/**
 * Throws unless `databaseUrl` points at this machine (127.0.0.1, localhost or ::1): tests create users and
 * databases, and must never run against a shared or production server by a stray environment variable
 * (after dub's `assert-local-database`).
 */
export function assertLocalDatabase(databaseUrl: string): void {
  let host: string;
  try {
    host = new URL(databaseUrl).hostname;
  } catch {
    throw new Error("refusing to run tests: the database URL is not a valid URL");
  }
  if (!LOOPBACK_HOSTS.has(host)) {
    throw new Error(
      `refusing to run tests against database host '${host}': only 127.0.0.1, localhost or ::1 are allowed`,
    );
  }
}

/** Source folders and files whose change requires a new `next build`. */
const BUILD_INPUT_DIRS = ["app", "lib", "components", "public", "styles", "generated", "prisma"];
const BUILD_INPUT_FILES = [
  "next.config.ts",
  "next.config.mjs",
  "next.config.js",
  "package.json",
  "package-lock.json",
  "tsconfig.json",
  "postcss.config.mjs",
  "postcss.config.js",
  "proxy.ts",
  "middleware.ts",
  "instrumentation.ts",
];

/**
 * How long to wait for another `next build` in the same folder (it holds `.next/lock`) before giving up.
 * 10 minutes: a build takes well under a minute here; two engineers or two test runs may queue behind each other.
 */
const BUILD_LOCK_WAIT_MS_MAX = 10 * 60_000;
/** Pause before re-checking after a build found the lock taken. 5 s: a fraction of a build's duration. */
const BUILD_LOCK_RETRY_MS = 5_000;

/**
 * Runs `next build` (NEXT_TELEMETRY_DISABLED=1, output to stderr) when `.next/BUILD_ID` is missing, older than
 * the newest file among the build inputs (app/, lib/, components/, public/, styles/, generated/, prisma/,
 * next.config.*, package*.json, tsconfig.json, proxy.ts, ...), or always when `FORCE_BUILD=1`. When another
 * `next build` holds the folder's lock, waits for it (up to 10 minutes) and checks again, since that build
 * may already be the one needed.
 *
 * Returns true when it built, false when the build was up to date. Throws when the build fails.
 */
export function ensureBuilt(root: string = projectRoot): boolean {
  const deadline = Date.now() + BUILD_LOCK_WAIT_MS_MAX;
  let force = process.env.FORCE_BUILD === "1";
  for (;;) {
    const reason = force ? "FORCE_BUILD=1" : buildStaleReason(root);
    if (reason === null) return false;
    process.stderr.write(`building the app (next build): ${reason}\n`);
    const result = spawnSync(process.execPath, ["node_modules/next/dist/bin/next", "build"], {
      cwd: root,
      env: { ...childEnvironment(), NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1" },
      // Piped, then copied to stderr (a caller's stdout, e.g. npm test's summary, stays clean). 64 MiB: a
      // build prints a few kilobytes; the bound only keeps a runaway log from exhausting memory.
      stdio: ["ignore", "pipe", "pipe"],
      maxBuffer: 64 * 1024 * 1024,
      encoding: "utf8",
    });
    process.stderr.write(result.stdout ?? "");
    process.stderr.write(result.stderr ?? "");
    if (result.error) throw new Error(`next build could not run: ${result.error.message}`);
    if (result.status === 0) return true;
    const lockTaken = /Another .*next build.* process is already running/.test(`${result.stdout}${result.stderr}`);
    if (!lockTaken || Date.now() >= deadline) {
      throw new Error(`next build failed (exit ${result.status}, signal ${result.signal})`);
    }
    process.stderr.write("another next build is running in this folder: waiting for it, then checking again\n");
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, BUILD_LOCK_RETRY_MS);
    // The other build may have been started before our sources changed: build again unless it is now fresh.
    force = false;
  }
}

/**
 * Why the app at `root` needs a build ("first build ..." when `.next/BUILD_ID` is missing, "<file> changed after
 * the last build" when a build input is newer), or null when the build is newer than every build input. Compares
 * modification times only; reads no file's content.
 */
export function buildStaleReason(root: string = projectRoot): string | null {
  const buildId = join(root, ".next", "BUILD_ID");
  if (!existsSync(buildId)) return "first build, about a minute on 2 cores";
  const builtAtMs = statSync(buildId).mtimeMs;
  const newest = newestInput(root);
  return newest.mtimeMs > builtAtMs ? `${newest.path} changed after the last build` : null;
}

function newestInput(root: string): { path: string; mtimeMs: number } {
  let newest = { path: "(none)", mtimeMs: 0 };
  const consider = (path: string, mtimeMs: number) => {
    if (mtimeMs > newest.mtimeMs) newest = { path, mtimeMs };
  };
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) consider(path, statSync(path).mtimeMs);
    }
  };
  for (const dir of BUILD_INPUT_DIRS) {
    const path = join(root, dir);
    if (existsSync(path)) walk(path);
  }
  for (const file of BUILD_INPUT_FILES) {
    const path = join(root, file);
    if (existsSync(path)) consider(path, statSync(path).mtimeMs);
  }
  return newest;
}

function once(work: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null;
  return () => (running ??= work());
}
