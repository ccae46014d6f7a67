/**
 * `npm run reconcile [-- --watch] [-- --user <id> ...]`: one reconciler pass (lib/reconciler/reconcile-once.ts),
 * printed as one JSON line on stdout (`{ examined, completed, failed, redriven, skipped, anomalies?,
 * bankUnreachable?, errored?, databaseUnreachable? }`); logs go to stderr. With `--watch`, a pass every
 * RECONCILE_INTERVAL_MS (one JSON line each) until Ctrl-C. `--user` (repeatable) limits the pass to those users'
 * rows and charges.
 *
 * Finds the database and the bank through DATABASE_URL/BANK_URL or a running demo's `.data/runtime.json`
 * (resolveCliEnvironment).
 *
 * Exit codes: 0 the pass ran and nothing needs attention; 1 the pass ran but reported anomalies (rows whose work
 * failed among them: case C29) or an unreachable bank (rows were left, not dropped: contract 7.5); 2 cannot run (no
 * running demo, bad arguments, a database that cannot be reached: the partial result is printed first).
 * `--watch` exits 0 on Ctrl-C/SIGTERM, 2 when it cannot start.
 */
import { parseArgs } from "node:util";
import pino from "pino";
import { resolveCliEnvironment } from "./lib/runtime-file";
import { exitWithHelpIfAsked } from "./lib/cli-help";
import { closeCliClients } from "./lib/close-cli-clients";
import { env } from "../lib/env";
import { USER_ID_PATTERN } from "../lib/bank/merchant-ref";
import { reconcileOnce, type ReconcileResult } from "../lib/reconciler/reconcile-once";
import { startReconcilerTimer } from "../lib/reconciler/start-reconciler-timer";

const EXIT_OK = 0;
const EXIT_NEEDS_ATTENTION = 1;
const EXIT_CANNOT_RUN = 2;

const USAGE = "usage: npm run reconcile [-- --watch] [-- --user <id> ...]";

const HELP = `${USAGE}

One reconciler pass: takes over top-ups whose lease expired and settles them from the bank, and makes sure every
succeeded bank charge has its credited top-up. Prints the pass as one JSON line on stdout; logs go to stderr.
  --watch            a pass every RECONCILE_INTERVAL_MS until Ctrl-C
  --user <id>        only these users' rows and charges (repeatable)

Finds the database and the bank through DATABASE_URL/BANK_URL or a running demo (.data/runtime.json).
Exit codes: 0 nothing needs attention; 1 anomalies (failed rows among them) or an unreachable bank (rows are
left, never dropped); 2 cannot run (no running demo, bad arguments, a database that cannot be reached).`;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

function printResult(result: ReconcileResult): void {
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function needsAttention(result: ReconcileResult): boolean {
  return (result.anomalies?.length ?? 0) > 0 || result.bankUnreachable !== undefined;
}

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  let watch: boolean;
  let userIds: string[] | undefined;
  try {
    const parsed = parseArgs({
      args: process.argv.slice(2),
      strict: true,
      allowPositionals: false,
      options: { watch: { type: "boolean" }, user: { type: "string", multiple: true } },
    });
    watch = parsed.values.watch ?? false;
    userIds = parsed.values.user;
  } catch (error) {
    say(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return EXIT_CANNOT_RUN;
  }
  if (userIds?.some((id) => !USER_ID_PATTERN.test(id))) {
    say(`--user takes a user id (printable ASCII, no ':' or spaces)\n${USAGE}`);
    return EXIT_CANNOT_RUN;
  }

  // Exits with 2 and "no running demo" when neither DATABASE_URL nor .data/runtime.json exists.
  resolveCliEnvironment();
  const settings = env();
  // Logs on stderr, so stdout carries only the JSON results.
  const logger = pino(
    { level: settings.LOG_LEVEL, base: { pid: process.pid } },
    pino.destination({ dest: 2, sync: true }),
  );

  if (!watch) {
    const result = await reconcileOnce({ logger, userIds });
    printResult(result);
    if (result.databaseUnreachable) return EXIT_CANNOT_RUN;
    return needsAttention(result) ? EXIT_NEEDS_ATTENTION : EXIT_OK;
  }

  if (settings.RECONCILE_INTERVAL_MS <= 0) {
    say("RECONCILE_INTERVAL_MS is 0 (the timer is off); set it to a positive number of milliseconds to use --watch");
    return EXIT_CANNOT_RUN;
  }
  say(`reconciling every ${settings.RECONCILE_INTERVAL_MS} ms; Ctrl-C stops`);
  const stop = startReconcilerTimer(settings.RECONCILE_INTERVAL_MS, {
    reconcile: { logger, userIds },
    onResult: printResult,
    onError: (error) => logger.error({ err: error }, "reconciler pass failed"),
    runImmediately: true,
    keepProcessAlive: true,
  });
  await new Promise<void>((resolve) => {
    const onSignal = () => resolve();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  });
  say("stopping after the pass in progress");
  await stop();
  return EXIT_OK;
}

main()
  .then(
    (code) => code,
    (error: unknown) => {
      say(`reconcile: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      return EXIT_CANNOT_RUN;
    },
  )
  .then(async (code) => {
    // A pass's reward-counter repair opens Redis as well as the pool: both must close for the process to end (C30).
    await closeCliClients();
    process.exitCode = code;
  });
