/**
 * `npm test`: the one gate. Checks prerequisites, builds the app when its sources changed, starts ONE stack
 * (embedded PostgreSQL, redis-server, sandbox bank, built app), hands it to every suite as `TEST_STACK`, and
 * runs, in order: the static checks (Biome format and lint, `tsc --noEmit` over the whole tree), vitest projects
 * `unit`, `integration`, `http`, then Playwright, then a short storm
 * (`npm run storm -- --short`, its own two app instances and servers; counted as one test). Each suite writes a
 * machine-readable report under reports/test/; the counts are summed and printed as the very last line:
 *
 *     N passed, N failed, N skipped
 *
 * (docs/development.md note 11: CI reads that line). Just above it, when anything failed, a `failed:` list names each
 * failed test (suite › file › test), static check, storm or suite that could not run, and a `passed only on a retry:`
 * list names each browser test that failed once on CI and then passed. Exit code 0 only when nothing failed and at
 * least one test ran.
 * A suite that exits non-zero without reporting a failed test (crash, unhandled error, setup failure) counts as
 * one failed test, so it cannot pass silently; so does a suite stopped past its bound ({@link SUITE_BOUND_MIN}), and,
 * after Ctrl-C or SIGTERM, the suite interrupted and each one not started. The stack is stopped on every path.
 *
 * Then the short cluster storm (`npm run storm -- --cluster --short`) when the apt packages are present.
 *
 * Usage: `npm test [-- --only static,unit,integration,http,e2e,storm,cluster] [-- <args passed to every runner>]`.
 */
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { exitWithHelpIfAsked } from "./lib/cli-help";
import { type ForegroundExit, registerCleanup, runForeground, shutdownSignal } from "./lib/processes";
import { missingClusterPackages } from "./lib/ha-cluster";
import { findRedisServerBinary } from "./lib/redis-server";
import { ensureBuilt, projectRoot, startStack, testStackJson, type Stack } from "./lib/stack";
import { type Counts, readPlaywrightReport, readVitestReport, type SuiteReport } from "./lib/test-reports";

const SUITES = ["static", "unit", "integration", "http", "e2e", "storm", "cluster"] as const;
type Suite = (typeof SUITES)[number];

/**
 * What failed, one line each (suite › file › test name), printed just above the summary line so that the end of
 * a CI log, often all that is kept of it, says which tests failed and not only how many.
 */
const failures: string[] = [];
/** Tests that passed only on a retry (e2e on CI, playwright.config.ts): counted as passed, named above the summary. */
const flaky: string[] = [];

/**
 * Each suite's bound, in minutes: about three times its run on a clean 2-core CI machine (static 1.5, unit 1,
 * integration 6, http 3, e2e 5, storm 1.5, cluster storm 4). A suite past its bound is stopped and counted as one
 * failed test, named, so that the rest still run and the summary line is printed within the CI job's 90 minutes.
 * The storms have their own, shorter bound and print where they were (scripts/storm/watchdog.ts).
 */
const SUITE_BOUND_MIN: Record<Suite, number> = {
  static: 10,
  unit: 10,
  integration: 25,
  http: 15,
  e2e: 20,
  storm: 15,
  cluster: 25,
};
const suiteBoundMs = (suite: Suite) => SUITE_BOUND_MIN[suite] * 60_000;

const CHROMIUM_PATH = "/usr/bin/chromium";
const REPORT_DIR = join(projectRoot, "reports", "test");

function parseArgs(argv: string[]): { suites: Suite[]; passThrough: string[] } {
  let suites: Suite[] = [...SUITES];
  const passThrough: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const only = arg === "--only" ? argv[++i] : arg.startsWith("--only=") ? arg.slice("--only=".length) : undefined;
    if (only === undefined) {
      passThrough.push(arg);
      continue;
    }
    const names = only
      .split(",")
      .map((name) => name.trim())
      .filter(Boolean)
      .map((name) => (name === "playwright" ? "e2e" : name));
    const unknown = names.filter((name) => !(SUITES as readonly string[]).includes(name));
    if (unknown.length > 0 || names.length === 0) {
      throw new UsageError(`--only takes a comma-separated list of ${SUITES.join(", ")}; got '${only}'`);
    }
    suites = SUITES.filter((suite) => names.includes(suite));
  }
  return { suites, passThrough };
}

class UsageError extends Error {}

/** Names the apt package for every missing prerequisite of the chosen suites. */
function missingPrerequisites(suites: Suite[]): string[] {
  const missing: string[] = [];
  const needsStack = suites.some(
    (suite) => suite !== "static" && suite !== "unit" && suite !== "storm" && suite !== "cluster",
  );
  if (needsStack && !findRedisServerBinary()) {
    missing.push("redis-server is not installed: run `apt-get install -y redis-server`");
  }
  if (suites.includes("e2e") && !existsSync(CHROMIUM_PATH)) {
    missing.push(`${CHROMIUM_PATH} is missing: run \`apt-get install -y chromium\``);
  }
  return missing;
}

function vitestReport(suite: Suite): string {
  return join(REPORT_DIR, `vitest-${suite}.json`);
}

async function runVitest(suite: Suite, stack: Stack | null, passThrough: string[]): Promise<Counts> {
  const report = vitestReport(suite);
  rmSync(report, { force: true });
  const status = await runForeground({
    name: `vitest ${suite}`,
    command: process.execPath,
    args: [
      "node_modules/vitest/vitest.mjs",
      "run",
      "--project",
      suite,
      "--reporter=default",
      "--reporter=json",
      `--outputFile.json=${report}`,
      // A project without test files yet is not a failure by itself; zero tests overall still fails the run.
      "--passWithNoTests",
      ...passThrough,
    ],
    cwd: projectRoot,
    env: suiteEnvironment(stack),
    timeoutMs: suiteBoundMs(suite),
  });
  return settle(`vitest ${suite}`, readVitestReport(report, suite, projectRoot), status);
}

async function runPlaywright(stack: Stack | null, passThrough: string[]): Promise<Counts> {
  const report = join(REPORT_DIR, "playwright.json");
  rmSync(report, { force: true });
  const status = await runForeground({
    name: "playwright",
    command: process.execPath,
    args: ["node_modules/@playwright/test/cli.js", "test", "--reporter=list,json", ...passThrough],
    cwd: projectRoot,
    env: { ...suiteEnvironment(stack), PLAYWRIGHT_JSON_OUTPUT_FILE: report },
    timeoutMs: suiteBoundMs("e2e"),
  });
  return settle("playwright", readPlaywrightReport(report), status);
}

/**
 * Turns a suite's report and exit status into counts: a non-zero exit with no failed test reported (a crash,
 * an unhandled error, a failed global setup, a missing report) is one failed test, and so is a run stopped past
 * its bound.
 */
function settle(name: string, report: SuiteReport | null, status: ForegroundExit): Counts {
  failures.push(...(report?.failures ?? []));
  flaky.push(...(report?.flaky ?? []));
  const result = report?.counts ?? { passed: 0, failed: 0, skipped: 0 };
  if (status.timedOut) {
    failures.push(`${name} stopped: still running past its bound`);
    result.failed += 1;
  } else if (status.code !== 0 && result.failed === 0) {
    const what = `${name} exited with ${status.code ?? "a signal"} without reporting a failed test`;
    process.stderr.write(`${what}: counted as 1 failed\n`);
    failures.push(what);
    result.failed = 1;
  }
  return result;
}

/**
 * The short storm: two app instances, a faulty bank, a crash and a Redis restart, then the reconciler
 * and the invariant audit. It starts and stops its own servers; its exit code is the verdict (0: every
 * invariant held), counted as one test.
 */
async function runStorm(): Promise<Counts> {
  const status = await runForeground({
    name: "storm",
    command: process.execPath,
    args: ["--import", "tsx", "scripts/storm.ts", "--short"],
    cwd: projectRoot,
    env: suiteEnvironment(null),
    timeoutMs: suiteBoundMs("storm"),
  });
  return stormCounts("storm (short)", status);
}

/**
 * A storm is one test: its exit code is the verdict (0 every invariant held, 1 one was violated, 2 it could not run);
 * stopped past its bound, it failed.
 */
function stormCounts(name: string, status: ForegroundExit): Counts {
  if (status.code === 0 && !status.timedOut) return { passed: 1, failed: 0, skipped: 0 };
  failures.push(
    status.timedOut
      ? `${name} stopped: still running past its bound`
      : `${name} exited with ${status.code ?? "a signal"} (1: an invariant violated; 2: it could not run)`,
  );
  return { passed: 0, failed: 1, skipped: 0 };
}

/**
 * The short cluster storm: `npm run storm -- --cluster --short`, one app instance behind HAProxy on
 * Patroni, a Redis Cluster and the three faults, with its own servers on free ports. Counted as one test; skipped
 * (and said so) when the apt packages it needs are missing (`.ci/run` installs them).
 */
async function runClusterStorm(): Promise<Counts> {
  const missing = missingClusterPackages();
  if (missing.length > 0) {
    process.stderr.write(`cluster storm skipped: missing apt packages ${missing.join(" ")}\n`);
    return { passed: 0, failed: 0, skipped: 1 };
  }
  const status = await runForeground({
    name: "cluster storm",
    command: process.execPath,
    args: ["--import", "tsx", "scripts/storm.ts", "--cluster", "--short"],
    cwd: projectRoot,
    env: suiteEnvironment(null),
    timeoutMs: suiteBoundMs("cluster"),
  });
  return stormCounts("cluster storm (short)", status);
}

/**
 * The static checks, one test each: generating generated/openapi-types.ts from the OpenAPI document,
 * `biome ci` (formatting and lint rules of biome.json, read-only) and `tsc --noEmit` over every folder
 * (tsconfig.json includes app, lib, tests, scripts, bench, bank and e2e).
 * A difference in formatting, a lint error or a type error anywhere fails `npm test`.
 */
async function runStatic(): Promise<Counts> {
  const checks = [
    {
      // The types the storm and the browser tests' helpers compile against; tsc below needs them.
      name: "OpenAPI types generated from the document",
      args: ["--import", "tsx", "scripts/openapi-types.ts"],
    },
    {
      name: "biome ci (format and lint)",
      args: ["node_modules/@biomejs/biome/bin/biome", "ci", "--max-diagnostics=50", "."],
    },
    { name: "tsc --noEmit (whole tree)", args: ["node_modules/typescript/bin/tsc", "--noEmit", "-p", "tsconfig.json"] },
  ];
  const counts: Counts = { passed: 0, failed: 0, skipped: 0 };
  for (const check of checks) {
    const status = await runForeground({
      name: check.name,
      command: process.execPath,
      args: check.args,
      cwd: projectRoot,
      env: suiteEnvironment(null),
      timeoutMs: suiteBoundMs("static"),
    });
    const ok = status.code === 0 && !status.timedOut;
    process.stderr.write(`${ok ? "✓" : "✘"} ${check.name}${status.timedOut ? " (stopped past its bound)" : ""}\n`);
    if (ok) {
      counts.passed += 1;
    } else {
      counts.failed += 1;
      failures.push(`static › ${check.name}`);
    }
  }
  return counts;
}

function suiteEnvironment(stack: Stack | null): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = { ...process.env };
  if (stack) environment.TEST_STACK = testStackJson(stack);
  else delete environment.TEST_STACK;
  return environment;
}

const total: Counts = { passed: 0, failed: 0, skipped: 0 };
function add(counts: Counts): void {
  total.passed += counts.passed;
  total.failed += counts.failed;
  total.skipped += counts.skipped;
}

/** A suite that could not run counts as one failed test. */
function notRun(suite: string, why: string): void {
  process.stderr.write(`${suite}: not run (${why}): counted as 1 failed\n`);
  failures.push(`${suite}: not run (${why})`);
  add({ passed: 0, failed: 1, skipped: 0 });
}

/** The chosen suites that have not finished; after a signal each counts as one failed test. */
const unfinishedSuites = new Set<Suite>();

let summaryPrinted = false;
/**
 * Prints the summary line once, on stdout; whatever comes after it goes to stderr or nowhere. After a signal
 * (Ctrl-C, or CI's time limit) the suite it interrupted and those it kept from starting count as one failed test
 * each: an interrupted run never ends on "0 failed".
 */
function printSummary(): void {
  if (summaryPrinted) return;
  summaryPrinted = true;
  const signal = shutdownSignal();
  if (signal) {
    for (const suite of unfinishedSuites) {
      failures.push(`${suite}: did not finish (${signal} received)`);
      total.failed += 1;
    }
  }
  if (flaky.length > 0) process.stdout.write(`passed only on a retry:\n${flaky.map((line) => `  ${line}\n`).join("")}`);
  if (failures.length > 0) process.stdout.write(`failed:\n${failures.map((line) => `  ${line}\n`).join("")}`);
  process.stdout.write(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped\n`);
}

const HELP = `usage: npm test [-- --only static,unit,integration,http,e2e,storm,cluster] [-- <args for every runner>]

Every suite against one stack it starts (embedded PostgreSQL, redis-server, the sandbox bank, the built app):
static checks (Biome, tsc), vitest unit, integration and http, Playwright, the short storm, and the short cluster
storm when its apt packages are installed. Ends with the line "N passed, N failed, N skipped".
  --only LIST        these suites only
Exit codes: 0 nothing failed and at least one test ran; 1 otherwise.`;

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  const { suites, passThrough } = parseArgs(process.argv.slice(2));
  const missing = missingPrerequisites(suites);
  if (missing.length > 0) {
    for (const line of missing) process.stderr.write(`missing prerequisite: ${line}\n`);
    failures.push(`missing prerequisites: ${missing.length}`);
    total.failed += 1;
    printSummary();
    return 1;
  }
  mkdirSync(REPORT_DIR, { recursive: true });

  const appSuites = suites.filter(
    (suite) => suite === "http" || suite === "e2e" || suite === "storm" || suite === "cluster",
  );
  let appReady = appSuites.length > 0;
  if (appReady) {
    try {
      ensureBuilt();
    } catch (error) {
      process.stderr.write(`build failed: ${describe(error)}\n`);
      appReady = false;
    }
  }

  let stack: Stack | null = null;
  // On Ctrl-C or SIGTERM: stop the stack, then print what was counted so far (processes.ts exits 128 + signal).
  // Registered before the stack starts, so an interrupted start (which cleans up after itself) still ends
  // with the summary line.
  const unregister = registerCleanup(async () => {
    await stack?.stop();
    printSummary();
  });
  const needsStack = suites.some(
    (suite) => suite !== "static" && suite !== "unit" && suite !== "storm" && suite !== "cluster",
  );
  if (needsStack && !shutdownSignal()) {
    try {
      // ERROR_DRILL: the page /error-drill throws, so e2e can show the error page (never set by `npm start`).
      stack = await startStack({ withApp: appReady, label: "npm-test", env: { ERROR_DRILL: "1" } });
    } catch (error) {
      process.stderr.write(`could not start the stack${appReady ? " with the app" : ""}: ${describe(error)}\n`);
      if (appReady) {
        appReady = false;
        stack = await startStack({ withApp: false, label: "npm-test" }).catch((retryError: unknown) => {
          process.stderr.write(`could not start the stack without the app either: ${describe(retryError)}\n`);
          return null;
        });
      }
    }
  }
  // One suite; `return` ends it.
  const runSuite = async (suite: Suite): Promise<void> => {
    if (suite === "static") {
      process.stderr.write("\n=== static ===\n");
      add(await runStatic());
      return;
    }
    if (suite === "cluster") {
      process.stderr.write("\n=== cluster storm (short) ===\n");
      if (!appReady) notRun("cluster storm", "the app could not be built");
      else add(await runClusterStorm());
      return;
    }
    if (suite === "storm") {
      process.stderr.write("\n=== storm (short) ===\n");
      if (!appReady) notRun("storm", "the app could not be built");
      else add(await runStorm());
      return;
    }
    const needsApp = suite === "http" || suite === "e2e";
    if ((suite !== "unit" && !stack) || (needsApp && !appReady)) {
      const why = needsApp && !appReady ? "the app could not be built or started" : "the stack could not be started";
      notRun(suite, `${why}, see above`);
      return;
    }
    process.stderr.write(`\n=== ${suite} ===\n`);
    add(suite === "e2e" ? await runPlaywright(stack, passThrough) : await runVitest(suite, stack, passThrough));
  };
  for (const suite of suites) unfinishedSuites.add(suite);
  try {
    for (const suite of suites) {
      if (shutdownSignal()) break;
      await runSuite(suite);
      // A suite cut short by a signal stays unfinished (printSummary counts it), whatever its runner reported.
      if (!shutdownSignal()) unfinishedSuites.delete(suite);
    }
  } finally {
    // After a signal the cleanup stays registered: processes.ts exits as soon as the cleanups are done, and
    // this cleanup is what prints the summary on that path.
    if (!shutdownSignal()) unregister();
    await stack?.stop();
  }
  if (stack) process.stderr.write(`stack logs: ${stack.logDir}\n`);

  const signal = shutdownSignal();
  if (signal) {
    printSummary();
    return signal === "SIGINT" ? 130 : signal === "SIGHUP" ? 129 : 143;
  }
  const ran = total.passed + total.failed;
  if (ran === 0) {
    process.stderr.write("no test ran: failing the run\n");
    failures.push("no test ran");
  }
  printSummary();
  return total.failed > 0 || ran === 0 ? 1 : 0;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`${error.message}\n`);
    } else {
      process.stderr.write(`npm test failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    }
    total.failed += 1;
    printSummary();
    process.exit(1);
  },
);
