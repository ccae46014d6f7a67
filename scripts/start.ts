/**
 * `npm start`: the production server for an operator's own PostgreSQL and Redis. Nothing is embedded
 * and nothing is built: `npm run build` makes the build this serves.
 *
 * Before anything listens, it checks everything below and, when something is wrong, lists all of it at once and
 * exits 1 (scripts/lib/start-checks.ts): the settings (lib/env.ts, with `DATABASE_URL` required), the secrets
 * (contract section 9), the build, and the database (reachable, every migration of prisma/migrations applied
 * with the checksum it was applied with, every function file of prisma/functions applied as it now is).
 * `--migrate` applies pending migrations and function files first, as `npm run db:migrate` does. Redis missing or
 * down is a warning: rewards answer 503 until it answers (contract section 6).
 *
 * Then it runs `next start -H $HOST -p $PORT`, with V8's heap bounded by `APP_HEAP_MB` (default 768 MB; 0 for V8's
 * default; an own `--max-old-space-size` in NODE_OPTIONS wins: scripts/lib/stack.ts `appHeapNodeArgs`, decision 051),
 * and the reconciler on a timer in this process (`RECONCILE_INTERVAL_MS`; `--no-reconciler` or 0 turns it off, e.g.
 * when it runs elsewhere).
 * SIGTERM or SIGINT (systemd, a container runtime, Ctrl-C): the reconciler finishes the pass in progress, Next.js
 * stops accepting connections and finishes the requests in flight, and the process exits 0. Exit codes: 0 after a
 * clean stop; 1 when it refuses to start, when the server exits on its own, or when stopping failed; 2 on a
 * command-line error.
 */
import { parseArgs } from "node:util";
import { env } from "../lib/env";
import { loadEnvFiles } from "./lib/env-files";
import { exitZeroAfterCleanShutdown, registerCleanup, runCleanups, shutdownSignal } from "./lib/processes";
import { checkBeforeStart } from "./lib/start-checks";
import { appHeapNodeArgs, projectRoot, spawnApp, waitForService } from "./lib/stack";

const USAGE = `usage: npm start [-- [--migrate] [--no-reconciler]]
  --migrate        apply pending database migrations before starting (as npm run db:migrate)
  --no-reconciler  do not run the reconciler in this process (run it elsewhere: npm run reconcile -- --watch)`;

/**
 * How long `next start` gets to listen. 60 s: it is ready in about a second on these machines; a cold disk or a
 * loaded host gets generous room before the start counts as failed.
 */
const LISTEN_TIMEOUT_MS = 60_000;

const say = (line: string) => process.stderr.write(`${line}\n`);

async function main(): Promise<number> {
  let options: { migrate: boolean; reconciler: boolean };
  try {
    const { values } = parseArgs({
      options: {
        migrate: { type: "boolean", default: false },
        "no-reconciler": { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
      allowPositionals: false,
    });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    options = { migrate: values.migrate, reconciler: !values["no-reconciler"] };
  } catch (error) {
    say(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return 2;
  }

  loadEnvFiles(projectRoot, false);
  const checks = await checkBeforeStart({ migrate: options.migrate, root: projectRoot, log: say });
  for (const warning of checks.warnings) say(`warning: ${warning}`);
  if (checks.problems.length > 0) {
    say(`npm start: refusing to start (${checks.problems.length} problem(s)); fix them and start again:`);
    for (const problem of checks.problems) say(`  - ${problem}`);
    return 1;
  }
  const settings = env();

  // Signals from here on: stop what runs, then exit 0 when that went cleanly (systemd counts 143 as a failure).
  exitZeroAfterCleanShutdown();
  const app = spawnApp({
    port: settings.PORT,
    host: settings.HOST,
    env: { ...process.env },
    log: "inherit",
  });
  registerCleanup(() => app.stop());
  await waitForService(app, `http://${urlHost(settings.HOST)}:${settings.PORT}/api/v1/health`, {
    // Listening is enough: a database that went down since the check makes health answer 503, and the server
    // must still run and recover when it comes back.
    anyStatus: true,
    timeoutMs: LISTEN_TIMEOUT_MS,
  });

  const interval = settings.RECONCILE_INTERVAL_MS;
  if (options.reconciler && interval > 0) {
    const { startReconcilerTimer } = await import("../lib/reconciler/start-reconciler-timer");
    const stopTimer = startReconcilerTimer(interval);
    registerCleanup(() => stopTimer());
    say(`reconciler: a pass every ${interval} ms in this process`);
  } else {
    say(`reconciler: off (${options.reconciler ? "RECONCILE_INTERVAL_MS=0" : "--no-reconciler"})`);
  }
  const heapArgs = appHeapNodeArgs(process.env).join(" ");
  say(
    `next-server heap: ${heapArgs || "no bound of ours"}${process.env.NODE_OPTIONS ? `; NODE_OPTIONS ${process.env.NODE_OPTIONS}` : ""}`,
  );
  say(`wallet serving on ${settings.HOST}:${settings.PORT} (APP_URL ${settings.APP_URL})`);

  const exit = await app.exited;
  // After SIGTERM or SIGINT, processes.ts runs the cleanups and exits; nothing more to do here.
  if (shutdownSignal()) return new Promise<number>(() => {});
  say(`next start exited on its own (code ${exit.code}, signal ${exit.signal})`);
  await runCleanups();
  return 1;
}

/** The host to probe: the wildcard addresses are reached through loopback. */
function urlHost(host: string): string {
  if (host === "0.0.0.0") return "127.0.0.1";
  if (host === "::") return "[::1]";
  return host.includes(":") ? `[${host}]` : host;
}

main().then(
  (code) => process.exit(code),
  async (error: unknown) => {
    say(`npm start failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await runCleanups();
    process.exit(1);
  },
);
