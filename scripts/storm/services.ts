/**
 * The services a storm runs against. In "own" mode it starts them all on 127.0.0.1 and free ports: embedded
 * PostgreSQL and redis-server (through scripts/lib/stack.ts, migrated), the sandbox bank with its fault rates
 * switched on, a webhook router that spreads the bank's deliveries over both app instances, two `next start`
 * instances sharing the database and Redis, and the reconciler as its own process. It can crash and restart one
 * app instance (SIGKILL of its process group) and Redis. In "given" mode it only holds the URLs.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, probeStatus, sleep, waitForHttp } from "../lib/ports";
import { registerCleanup, signalGroup, spawnService, type Service } from "../lib/processes";
import { startRedisServer, type RedisServer } from "../lib/redis-server";
import { randomAuthSecret, randomWebhookSecret } from "../lib/secrets";
import { LOAD_OPS_PER_MINUTE, projectRoot, spawnApp, spawnBank, startStack, type Stack } from "../lib/stack";
import type { StormOptions } from "./options";
import { startWebhookRouter, type WebhookRouter } from "./webhook-router";

/**
 * Settings of the app instances, the bank and the reconciler during a storm, and why each has its value.
 * They are passed as environment to the child processes (lib/env.ts and bank/config.ts read them there).
 */
export const STORM_SETTINGS = {
  /**
   * Lease of a claimed top-up: 5 s. Long enough that a live request never loses its row (its bank call is bounded
   * by BANK_TIMEOUT_MS below), short enough that rows orphaned by the SIGKILL are taken over by the reconciler
   * within the storm instead of after the default 30 s.
   */
  LEASE_MS: "5000",
  /** One bank call: 2.5 s, above the slow switch (BANK_SLOW_MS, 1.5 s), so "slow" is slow, not lost. */
  BANK_TIMEOUT_MS: "2500",
  /** Reconciler every 2 s: several passes per staged crash, each finding the rows whose lease just expired. */
  RECONCILE_INTERVAL_MS: "2000",
  /** The app's logs go to files; warnings and errors are what a storm's post-mortem needs. */
  LOG_LEVEL: "warn",
  /** The contract's default, stated so that the storm's reward days are UTC whatever the machine says. */
  REWARD_TZ: "UTC",
  /**
   * Daily reward cap: 15 minor units, three rewards of 5 (the contract's default is 50). A user of the 30 s CI storm
   * asks for about four rewards, so with the default cap nobody would reach it and the 429 path, the release of
   * reservations over the cap and invariant 7.3 at the cap would go untested in CI.
   */
  REWARD_DAILY_CAP_MINOR: "15",
  /**
   * Wallet ceiling: 200,000 minor units (2,000.00; the contract's default is 10,000,000). A storm user's own
   * top-ups (5-50 units, net of payments) stay far below it; the users the storm funds to just under it
   * (traffic.ts, CEILING_HEADROOM_MINOR) then meet `422 balance_limit_exceeded` on most top-ups and rewards, which
   * the default would need a 10,000,000 funding top-up, ten times MAX_AMOUNT_MINOR, to reach (case C15).
   */
  MAX_BALANCE_MINOR: "200000",
} as const;

/**
 * The sandbox bank's fault rates during a storm (probability per new charge, bank/config.ts), chosen so that every
 * path of contract section 5 happens many times in a 2-minute run of a few thousand top-ups:
 * duplicates (each webhook sent 3 times) for a quarter of the charges, for 15% the pattern of case C14 (a stale
 * `charge.failed` goes first and the success deliveries are held back until it is delivered), lost replies (charge made, connection dropped) and charges without any webhook (only the reconciler
 * can learn those) for 5% each, slow replies for 3%, declines for 5%.
 */
export const STORM_FAULT_RATES = {
  decline: 0.05,
  slow: 0.03,
  lost: 0.05,
  dup: 0.25,
  reorder: 0.15,
  nohook: 0.05,
} as const;

/**
 * The bank's webhook schedule during a storm: settle 100 ms after the charge (like a provider's "shortly after"),
 * retry from 250 ms doubling to 2 s, 8 attempts. With the staged crash of one instance taking ~3 s and the router
 * sending a delivery to a dead instance, a delivery gets through within a few seconds instead of the default's
 * minutes, so the storm's drain stays short. Slow replies take 1.5 s (below BANK_TIMEOUT_MS).
 *
 * 64 deliveries in flight (default 8) and 100 finished deliveries kept (default 1000). A full storm creates ~50
 * charges per second and, with the duplicate and reorder rates, ~85 deliveries per second; under that load one
 * delivery takes ~200 ms through the router and a busy app, so 8 (or 16, measured) in flight fall behind by many
 * seconds, every row's 5 s lease expires first, and the reconciler, not the webhook, finishes nearly every top-up.
 * 64 in flight (~300 deliveries per second) keep pace, so webhooks, requests and the reconciler really race. The
 * sandbox rewrites its whole state file on every group of changes (docs/bank-sandbox.md, "State and restarts");
 * a short history keeps that file, and the bank's time per write, small.
 */
const STORM_BANK_SCHEDULE = {
  BANK_WEBHOOK_DELAY_MS: "100",
  BANK_WEBHOOK_RETRY_BASE_MS: "250",
  BANK_WEBHOOK_RETRY_MAX_MS: "2000",
  BANK_WEBHOOK_MAX_ATTEMPTS: "8",
  BANK_WEBHOOK_TIMEOUT_MS: "3000",
  BANK_WEBHOOK_CONCURRENCY: "64",
  BANK_DELIVERY_HISTORY_MAX: "100",
  BANK_SLOW_MS: "1500",
  BANK_LOG_LEVEL: "warn",
} as const;

/** The sandbox bank's settings during a storm: {@link STORM_FAULT_RATES}, the storm's seed, {@link STORM_BANK_SCHEDULE}. */
export function stormBankEnvironment(seed: number): Record<string, string> {
  return {
    BANK_FAULT_DECLINE_RATE: String(STORM_FAULT_RATES.decline),
    BANK_FAULT_SLOW_RATE: String(STORM_FAULT_RATES.slow),
    BANK_FAULT_LOST_RATE: String(STORM_FAULT_RATES.lost),
    BANK_FAULT_DUP_RATE: String(STORM_FAULT_RATES.dup),
    BANK_FAULT_REORDER_RATE: String(STORM_FAULT_RATES.reorder),
    BANK_FAULT_NOHOOK_RATE: String(STORM_FAULT_RATES.nohook),
    BANK_FAULT_SEED: String(seed),
    ...STORM_BANK_SCHEDULE,
  };
}

/**
 * How long a (re)started app instance or the bank may take to answer its health route: 60 s. `next start` is ready
 * in 1-2 s here; the bound only turns a hung start into an error instead of a hung storm.
 */
const READY_TIMEOUT_MS = 60_000;

export interface StormServices {
  readonly appUrls: readonly string[];
  readonly databaseUrl: string;
  readonly bankUrl: string;
  readonly redisUrl: string | null;
  /** The secret the bank signs webhooks with (own mode; never printed), or null for given services. */
  readonly webhookSecrets: string | null;
  /** True when the storm started the services and may crash them. */
  readonly canCrash: boolean;
  /** Where the logs of every service are (own mode), else null. */
  readonly logDir: string | null;
  /** The reconciler process's log (JSON result lines on its stdout), or null when none was started. */
  readonly reconcilerLog: string | null;
  /** Webhook deliveries the router forwarded, per instance, and how many failed to reach one (own mode). */
  webhookRouting(): { perInstance: number[]; unreachable: number } | null;
  /** SIGKILLs app instance `index` with its whole process group and waits for it to exit. */
  killApp(index: number): Promise<void>;
  /** Starts app instance `index` again on its port and waits for its health route. */
  restartApp(index: number): Promise<void>;
  /** SIGKILLs redis-server and starts a fresh one (empty, no persistence) on the same port. Returns the downtime. */
  restartRedis(): Promise<{ downMs: number }>;
  /** Stops the reconciler process after its current pass (bounded). */
  stopReconciler(): Promise<void>;
  /** Stops everything this module started. Safe to call twice. */
  stop(): Promise<void>;
}

/** The environment handed to children: ours minus the variables that would point them at another stack. */
function childEnvironment(): Record<string, string> {
  const environment: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (key.startsWith("VITEST") || key === "TEST_STACK" || key === "DATABASE_URL" || key === "REDIS_URL") continue;
    environment[key] = value;
  }
  return environment;
}

/**
 * Wraps URLs given on the command line. Nothing is started, nothing can be crashed, and the bank's fault rates
 * are set at run time through its `/_sandbox/faults` control by the caller.
 */
export function givenServices(target: Extract<StormOptions["target"], { kind: "given" }>): StormServices {
  const nothing = async () => {};
  const refuse = async () => {
    throw new Error("the storm did not start these services and cannot crash them");
  };
  return {
    appUrls: target.appUrls,
    databaseUrl: target.databaseUrl,
    bankUrl: target.bankUrl,
    redisUrl: target.redisUrl,
    webhookSecrets: null,
    canCrash: false,
    logDir: null,
    reconcilerLog: null,
    webhookRouting: () => null,
    killApp: refuse,
    restartApp: refuse,
    restartRedis: refuse,
    stopReconciler: nothing,
    stop: nothing,
  };
}

/**
 * Starts the whole storm stack (own mode): PostgreSQL + Redis (migrated), the webhook router, the sandbox bank
 * with {@link STORM_FAULT_RATES} and the storm's seed, two app instances, and the reconciler process
 * (`scripts/reconcile.ts --watch`, when that script exists). The app must already be built.
 *
 * Returns the handle. Throws, after stopping whatever it had started, when a service fails to become ready.
 */
export async function startOwnServices(options: { seed: number; appInstances: number }): Promise<StormServices> {
  const stack: Stack = await startStack({ withApp: false, label: "storm" });
  const services: Service[] = [];
  const apps: (Service | null)[] = [];
  let router: WebhookRouter | null = null;
  let reconciler: Service | null = null;
  let redisReplacement: RedisServer | null = null;
  const bankStateDir = mkdtempSync(join(tmpdir(), "storm-bank-"));
  const inherited = childEnvironment();
  // This storm's own secrets (case C16); one session-signing secret for both instances, as behind a load balancer.
  const webhookSecrets = randomWebhookSecret();
  const authSecret = randomAuthSecret();

  let stopped: Promise<void> | null = null;
  const stopAll = () =>
    (stopped ??= (async () => {
      await reconciler?.stop();
      await Promise.all(apps.map((app) => app?.stop()));
      await Promise.all(services.map((service) => service.stop()));
      await router?.close();
      await redisReplacement?.stop();
      await stack.stop();
      rmSync(bankStateDir, { recursive: true, force: true });
    })());
  // A signal while the services start stops them too (the caller registers its own cleanup once this returns).
  const unregisterStart = registerCleanup(stopAll);

  try {
    const [bankPort, ...appPorts] = await Promise.all([
      freePort(),
      ...Array.from({ length: options.appInstances }, () => freePort()),
    ]);
    const appUrls = appPorts.map((port) => `http://127.0.0.1:${port}`);
    const bankUrl = `http://127.0.0.1:${bankPort}`;
    router = await startWebhookRouter({ appUrls, seed: options.seed });

    const bank = spawnBank({
      env: {
        ...inherited,
        BANK_PORT: String(bankPort),
        // The bank delivers to the router, which spreads deliveries over both instances (one APP_URL only).
        APP_URL: router.url,
        BANK_WEBHOOK_SECRETS: webhookSecrets,
        BANK_STATE_FILE: join(bankStateDir, "bank-state.json"),
        ...stormBankEnvironment(options.seed),
      },
      log: join(stack.logDir, "bank.log"),
    });
    services.push(bank);

    const appEnvironment = (port: number): Record<string, string> => ({
      ...inherited,
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: stack.redisUrl,
      PORT: String(port),
      BANK_PORT: String(bankPort),
      BANK_URL: bankUrl,
      APP_URL: `http://127.0.0.1:${port}`,
      BETTER_AUTH_URL: `http://127.0.0.1:${port}`,
      BANK_WEBHOOK_SECRETS: webhookSecrets,
      BETTER_AUTH_SECRET: authSecret,
      // The storm checks money; its receipts stay queued in the outbox (docs/decisions/054-mail-outbox.md).
      MAIL_DELIVERY: "off",
      LEASE_MS: STORM_SETTINGS.LEASE_MS,
      BANK_TIMEOUT_MS: STORM_SETTINGS.BANK_TIMEOUT_MS,
      LOG_LEVEL: STORM_SETTINGS.LOG_LEVEL,
      REWARD_TZ: STORM_SETTINGS.REWARD_TZ,
      REWARD_DAILY_CAP_MINOR: STORM_SETTINGS.REWARD_DAILY_CAP_MINOR,
      MAX_BALANCE_MINOR: STORM_SETTINGS.MAX_BALANCE_MINOR,
      OPS_PER_MINUTE: LOAD_OPS_PER_MINUTE,
    });
    const startInstance = (index: number, generation: number): Service => {
      const port = appPorts[index]!;
      return spawnApp({
        name: `app${index + 1}${generation > 0 ? `.${generation}` : ""}`,
        port,
        env: appEnvironment(port),
        log: join(stack.logDir, `app${index + 1}.log`),
      });
    };
    const generations = appPorts.map(() => 0);
    for (let index = 0; index < appPorts.length; index++) apps.push(startInstance(index, 0));

    await Promise.all([
      waitReady(bank, `${bankUrl}/health`),
      ...apps.map((app, index) => waitReady(app!, `${appUrls[index]}/api/v1/health`)),
    ]);

    const reconcileScript = join(projectRoot, "scripts", "reconcile.ts");
    const reconcilerLog = join(stack.logDir, "reconciler.log");
    if (existsSync(reconcileScript)) {
      reconciler = spawnService({
        name: "reconciler",
        command: process.execPath,
        args: ["--import", "tsx", "scripts/reconcile.ts", "--watch"],
        cwd: projectRoot,
        env: {
          ...inherited,
          NODE_ENV: "production",
          DATABASE_URL: stack.databaseUrl,
          REDIS_URL: stack.redisUrl,
          BANK_URL: bankUrl,
          LEASE_MS: STORM_SETTINGS.LEASE_MS,
          BANK_TIMEOUT_MS: STORM_SETTINGS.BANK_TIMEOUT_MS,
          RECONCILE_INTERVAL_MS: STORM_SETTINGS.RECONCILE_INTERVAL_MS,
          LOG_LEVEL: STORM_SETTINGS.LOG_LEVEL,
          MAX_BALANCE_MINOR: STORM_SETTINGS.MAX_BALANCE_MINOR,
        },
        log: reconcilerLog,
      });
    }

    unregisterStart();
    const redisPort = Number(new URL(stack.redisUrl).port);
    let redisPid = stack.redisPid;

    return {
      appUrls,
      databaseUrl: stack.databaseUrl,
      bankUrl,
      redisUrl: stack.redisUrl,
      webhookSecrets,
      canCrash: true,
      logDir: stack.logDir,
      reconcilerLog: reconciler ? reconcilerLog : null,
      webhookRouting: () => router?.counts() ?? null,
      async killApp(index) {
        const app = apps[index];
        if (!app) return;
        signalGroup(app.pid, "SIGKILL");
        await app.exited;
        await app.stop();
        apps[index] = null;
      },
      async restartApp(index) {
        generations[index]! += 1;
        const app = startInstance(index, generations[index]!);
        apps[index] = app;
        await waitServing(app, `${appUrls[index]}/api/v1/health`);
      },
      async restartRedis() {
        const startedMs = Date.now();
        signalGroup(redisPid, "SIGKILL");
        await waitForExit(redisPid);
        const previous = redisReplacement;
        redisReplacement = await startRedisServer({ port: redisPort, log: join(stack.logDir, "redis-restarted.log") });
        redisPid = redisReplacement.pid;
        await previous?.stop();
        return { downMs: Date.now() - startedMs };
      },
      async stopReconciler() {
        await reconciler?.stop();
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    unregisterStart();
    throw error;
  }
}

async function waitReady(service: Service, url: string): Promise<void> {
  try {
    await waitForHttp(url, READY_TIMEOUT_MS, {
      failIf: () => {
        const exit = service.exitStatus();
        return exit ? `${service.name} exited (code ${exit.code}, signal ${exit.signal})` : null;
      },
    });
  } catch (error) {
    const tail = service.recentOutput().split("\n").slice(-30).join("\n");
    throw new Error(
      `${service.name} did not become ready: ${error instanceof Error ? error.message : String(error)}\n${tail}`,
    );
  }
}

/**
 * Budget of one health probe of a restarted instance: 10 s. The instance comes back into a storm: clients that
 * failed over start sending to it at once, and a probe can wait behind hundreds of their requests. With the 2 s
 * probes of scripts/lib/ports.ts such a probe times out again and again although the instance is serving.
 */
const SERVING_PROBE_TIMEOUT_MS = 10_000;
/** Pause between probes while the port is not open yet: 100 ms (`next start` listens about a second after spawn). */
const SERVING_PROBE_INTERVAL_MS = 100;

/**
 * Waits until a restarted instance answers its health route with any status (it is then accepting and serving
 * requests), at most {@link READY_TIMEOUT_MS}. Throws with its output when it exits or does not answer in time.
 */
async function waitServing(service: Service, url: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = "no attempt made";
  while (Date.now() < deadline) {
    const exit = service.exitStatus();
    if (exit)
      throw new Error(
        `${service.name} exited (code ${exit.code}, signal ${exit.signal}):\n${service.recentOutput().split("\n").slice(-30).join("\n")}`,
      );
    try {
      await probeStatus(url, SERVING_PROBE_TIMEOUT_MS);
      return;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await sleep(SERVING_PROBE_INTERVAL_MS);
  }
  throw new Error(`${service.name} did not answer ${url} within ${READY_TIMEOUT_MS} ms (last: ${last})`);
}

/**
 * Waits until `pid` is gone (at most 5 s: a SIGKILLed process disappears within milliseconds; the bound only keeps
 * a zombie from hanging the storm).
 */
async function waitForExit(pid: number): Promise<void> {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    // 20 ms between checks: a killed process is reaped within a few of them.
    await sleep(20);
  }
}
