/**
 * `npm run dev`, as a contributor runs it from a clone: the demo's embedded services (PostgreSQL,
 * redis-server, the sandbox bank, the reconciler, the seeded demo user) with `next dev` in front. It serves the
 * wallet page to the signed-in demo user with a clean browser console (no error, no Content-Security-Policy violation:
 * decision 057), shows an edited page and an edited route handler without a restart, refuses a second demo or dev in
 * the same checkout, warns when an idle database connection drops while it runs, and stops on Ctrl-C without a line at
 * warning level or above.
 *
 * The test never edits this checkout: it runs `npm run dev` in a copy of the project in the system temp folder
 * (sources copied, node_modules hard-linked, which takes a few seconds; a full copy where hard links cannot be
 * made), on free ports, and edits files there. Every wait has a deadline, and afterAll stops whatever the copy
 * still runs (processes whose working folder is inside it, and its embedded PostgreSQL), so a failure cannot leave
 * servers behind or hang the run.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkoutLockPath } from "../../scripts/lib/checkout-lock";
import { embeddedPostgresRoot, stopOrphanedPostgres } from "../../scripts/lib/embedded-postgres";
import { freePort, isPortFree, sleep, waitForHttp } from "../../scripts/lib/ports";
import {
  isProcessRunning,
  signalGroup,
  spawnService,
  type Service,
  type ServiceExit,
} from "../../scripts/lib/processes";
import { runtimeFilePath } from "../../scripts/lib/runtime-file";
import { projectRoot } from "../../scripts/lib/stack";
import { CSP_VIOLATION, visitAndCollectConsole } from "../helpers/browser-console";
import { waitFor } from "../helpers/wait";

/** Folders of the checkout not copied: dependencies (linked instead), build output, state, reports, VCS. */
const NOT_COPIED = new Set([
  "node_modules",
  ".next",
  ".git",
  ".data",
  "reports",
  "test-results",
  "playwright-report",
  ".stryker-tmp",
]);

/**
 * Bounds, all far above what they take on an idle 2-core machine, so a loaded one does not fail them, and all
 * finite, so a broken dev server fails the test instead of hanging it. Start: the dev stack's own bound is 180 s
 * (scripts/lib/local-stack.ts); it fails by itself before this one. Compile: `next dev` compiles a page on its
 * first request (the wallet page took ~20 s on a loaded machine). Refusal: npm, tsx and the settings check only.
 * Leftovers: Next.js's detached telemetry flush, started as the dev server stops, exits within a second or two.
 */
const START_TIMEOUT_MS = 200_000;
const COMPILE_TIMEOUT_MS = 120_000;
const REFUSAL_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 60_000;
const LEFTOVER_EXIT_TIMEOUT_MS = 30_000;

/** The demo user that `npm run dev` seeds (scripts/lib/local-stack.ts). */
const DEMO_USER = { email: "demo@example.com", password: "demo-password-1" };

/** A route handler that exists only in the copy, to edit while the server runs. */
const PROBE_ROUTE = join("app", "dev-probe", "route.ts");
const probeSource = (version: string) =>
  `export function GET() {\n  return Response.json({ version: "${version}" });\n}\n`;

let copyRoot = "";
let appUrl = "";
let appPort = 0;
let bankPort = 0;
let dev: Service | null = null;

/** The environment of every npm command run in the copy: none of the test stack's settings leak in. */
function copyEnvironment(): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? tmpdir(),
    PORT: String(appPort),
    BANK_PORT: String(bankPort),
    LOG_LEVEL: "warn",
  };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  return env;
}

/** Copies the project's sources to a new temp folder and links (or copies) node_modules there. */
function copyProject(): string {
  // Real path: the copy's scripts resolve their own folder with symlinks resolved, and so must this test.
  const root = realpathSync(mkdtempSync(join(tmpdir(), "wallet-dev-test-")));
  for (const entry of readdirSync(projectRoot)) {
    // A developer's own .env files would point the copy at their servers: only the example goes along.
    if (NOT_COPIED.has(entry) || (entry.startsWith(".env") && entry !== ".env.example")) continue;
    cpSync(join(projectRoot, entry), join(root, entry), { recursive: true, verbatimSymlinks: true });
  }
  // Turbopack refuses a node_modules symlink that leaves the project folder; hard links are real entries of the
  // copy and take ~3 s for the ~37,000 files. Across file systems hard links fail: copy them instead (slower).
  const linked = spawnSync("cp", ["-al", join(projectRoot, "node_modules"), join(root, "node_modules")], {
    stdio: "pipe",
  });
  if (linked.status !== 0) {
    rmSync(join(root, "node_modules"), { recursive: true, force: true });
    const copied = spawnSync("cp", ["-a", join(projectRoot, "node_modules"), join(root, "node_modules")], {
      stdio: "pipe",
    });
    if (copied.status !== 0) throw new Error(`could not copy node_modules: ${copied.stderr.toString()}`);
  }
  mkdirSync(dirname(join(root, PROBE_ROUTE)), { recursive: true });
  writeFileSync(join(root, PROBE_ROUTE), probeSource("v1"));
  return root;
}

/** Runs `npm run <script>` in the copy as its own process group, its output in reports/stack-logs. */
function runInCopy(script: string, name: string): Service {
  return spawnService({
    name,
    command: "npm",
    args: ["run", script],
    cwd: copyRoot,
    env: copyEnvironment(),
    log: join(projectRoot, "reports", "stack-logs", `${name}.log`),
  });
}

/** Resolves with the service's exit status, or throws when it has not exited within `timeoutMs`. */
async function exitOf(service: Service, timeoutMs: number): Promise<ServiceExit> {
  const outcome = await Promise.race([service.exited, sleep(timeoutMs).then(() => null)]);
  if (!outcome) throw new Error(`${service.name} did not exit within ${timeoutMs} ms:\n${service.recentOutput()}`);
  return outcome;
}

/** Polls `read` until `accept` holds for its result, for at most `timeoutMs`; returns the accepted result. */
function pollUntil<T>(read: () => Promise<T>, accept: (value: T) => boolean, timeoutMs: number): Promise<T> {
  return waitFor(read, accept, { what: "the dev server's answer", timeoutMs, intervalMs: 500 });
}

/** GET `path` on the dev server (optionally with a cookie); the body as text ("" on a network error). */
async function getText(path: string, cookie?: string): Promise<string> {
  try {
    const response = await fetch(`${appUrl}${path}`, {
      headers: cookie ? { cookie } : {},
      redirect: "manual",
      signal: AbortSignal.timeout(COMPILE_TIMEOUT_MS),
    });
    return `${response.status} ${await response.text()}`;
  } catch (error) {
    return `network error: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** The `Content-Security-Policy` of a page of the dev server ("" while it cannot answer, e.g. recompiling). */
async function pagePolicy(path: string): Promise<string> {
  try {
    const response = await fetch(`${appUrl}${path}`, { signal: AbortSignal.timeout(COMPILE_TIMEOUT_MS) });
    await response.arrayBuffer();
    return response.headers.get("content-security-policy") ?? "";
  } catch {
    return "";
  }
}

/**
 * Opens the sign-in and wallet pages in Chromium as the signed-in demo user: first with the dev server's own policy,
 * where the console must stay clean; then, as the check's negative control, with the production policy served by
 * the same dev server (the copy's proxy.ts edited, then restored), where it must show React's refused `eval`.
 */
async function expectCleanBrowserConsole(cookie: string): Promise<void> {
  const visit = { origin: appUrl, paths: ["/sign-in", "/wallet"], cookie, timeoutMs: COMPILE_TIMEOUT_MS };
  const clean = await visitAndCollectConsole(visit);
  expect(clean.statuses).toEqual([200, 200]);
  // Next's hot reload connected on each page (connect-src 'self' allows its same-origin websocket).
  expect(clean.hotReloadSockets).toHaveLength(2);
  expect(clean.problems).toEqual([]);

  const proxyFile = join(copyRoot, "proxy.ts");
  const proxySource = readFileSync(proxyFile, "utf8");
  expect(proxySource.split("pagePolicyMode()").length - 1, "proxy.ts must pick the policy with pagePolicyMode()").toBe(
    1,
  );
  writeFileSync(proxyFile, proxySource.replace("pagePolicyMode()", '"production"'));
  try {
    await pollUntil(
      () => pagePolicy("/sign-in"),
      (policy) => policy.includes("script-src") && !policy.includes("unsafe-eval"),
      COMPILE_TIMEOUT_MS,
    );
    const refused = await visitAndCollectConsole({ ...visit, paths: ["/wallet"] });
    expect(refused.problems).toContain(`${CSP_VIOLATION} script-src eval`);
  } finally {
    writeFileSync(proxyFile, proxySource);
  }
  await pollUntil(
    () => pagePolicy("/sign-in"),
    (policy) => policy.includes("'unsafe-eval'"),
    COMPILE_TIMEOUT_MS,
  );
}

/**
 * Ends, from the server's side, every idle connection the wallet's pools (`application_name` wallet-app: the app's
 * and this stack's reconciler) hold to the dev stack's database, as a failover or a restarted server would; returns
 * how many it ended.
 */
async function terminateIdleAppConnections(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const ended = await client.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'wallet-app' AND state = 'idle'",
    );
    return ended.rowCount ?? 0;
  } finally {
    await client.end();
  }
}

/** Local ports of the TCP sockets process `pid` holds open (Linux /proc), to find its connections to PostgreSQL. */
function tcpPortsOf(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (socket) inodes.add(socket[1]!);
    } catch {
      // Closed meanwhile.
    }
  }
  const ports = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const rows = existsSync(table) ? readFileSync(table, "utf8").split("\n").slice(1) : [];
    for (const row of rows) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const fields = row.trim().split(/\s+/);
      if (fields.length > 9 && inodes.has(fields[9]!)) ports.add(Number.parseInt(fields[1]!.split(":")[1]!, 16));
    }
  }
  return ports;
}

/** How many idle connections of the wallet's pools process `pid` holds to the dev stack's database. */
async function idleAppConnectionsOf(databaseUrl: string, pid: number): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const idle = await client.query<{ client_port: number }>(
      "SELECT client_port FROM pg_stat_activity WHERE application_name = 'wallet-app' AND state = 'idle'",
    );
    const ports = tcpPortsOf(pid);
    return idle.rows.filter((row) => ports.has(row.client_port)).length;
  } finally {
    await client.end();
  }
}

/** Lines at pino's warning level or above (`"level":40` warn, 50 error, 60 fatal), wherever a service prints them. */
function warningLines(output: string): string[] {
  return output.split("\n").filter((line) => /"level":\s*[456]\d\b/.test(line));
}

/** Processes whose working folder is inside the copy: everything `npm run dev` started there but PostgreSQL. */
function processesInCopy(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if (cwd === copyRoot || cwd.startsWith(`${copyRoot}/`)) pids.push(Number(entry));
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids.filter((pid) => isProcessRunning(pid));
}

/** `<pid> <state> pgrp=<pgrp> <command line>` of a process, for failure messages. */
function describeProcess(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const commandLine = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").trim();
    return `${pid} ${fields[0]} pgrp=${fields[2]} ${commandLine}`;
  } catch {
    return `${pid} (gone)`;
  }
}

beforeAll(async () => {
  copyRoot = copyProject();
  [appPort, bankPort] = await Promise.all([freePort(), freePort()]);
  appUrl = `http://127.0.0.1:${appPort}`;
}, 120_000);

afterAll(async () => {
  if (dev && !dev.exitStatus()) signalGroup(dev.pid, "SIGKILL");
  for (const pid of processesInCopy()) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  if (copyRoot) {
    const pgRoot = embeddedPostgresRoot(copyRoot);
    if (existsSync(pgRoot)) {
      for (const entry of readdirSync(pgRoot)) {
        if (entry.startsWith("data-")) await stopOrphanedPostgres(join(pgRoot, entry));
      }
      rmSync(pgRoot, { recursive: true, force: true });
    }
    rmSync(copyRoot, { recursive: true, force: true });
  }
}, 120_000);

describe("npm run dev", () => {
  it(
    "serves the wallet page, shows edits without a restart, refuses a second stack, and stops on Ctrl-C",
    async () => {
      dev = runInCopy("dev", "dev-test");
      // The stack writes its runtime file once the bank and the app answer their health checks.
      await pollUntil(
        async () => {
          if (dev?.exitStatus()) throw new Error(`npm run dev exited:\n${dev.recentOutput()}`);
          return existsSync(runtimeFilePath(copyRoot));
        },
        (written) => written,
        START_TIMEOUT_MS,
      );
      await waitForHttp(`${appUrl}/api/v1/health`, COMPILE_TIMEOUT_MS);
      const runtime = JSON.parse(readFileSync(runtimeFilePath(copyRoot), "utf8")) as Record<string, unknown>;
      expect(runtime).toMatchObject({ appUrl, bankUrl: `http://127.0.0.1:${bankPort}` });
      expect(String(runtime.databaseUrl)).toMatch(/^postgres:\/\/.*@127\.0\.0\.1:\d+\/wallet$/);

      // The demo user was seeded: sign in as a browser would (same origin), then load the wallet page.
      const signIn = await fetch(`${appUrl}/api/auth/sign-in/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: appUrl },
        body: JSON.stringify(DEMO_USER),
        signal: AbortSignal.timeout(COMPILE_TIMEOUT_MS),
      });
      expect(signIn.status).toBe(200);
      const cookie = signIn.headers
        .getSetCookie()
        .map((line) => line.split(";")[0])
        .join("; ");
      expect(cookie).not.toBe("");
      const page = await getText("/wallet", cookie);
      expect(page).toMatch(/^200 /);
      expect(page).toContain("<h1>Wallet</h1>");
      expect(page).toContain('data-testid="balance"');

      // What a developer's browser shows: no console error, no CSP violation (and the check can see one).
      await expectCleanBrowserConsole(cookie);

      // An edited page shows on the next request, from the same server process.
      const marker = `edited-${randomBytes(4).toString("hex")}`;
      const pageFile = join(copyRoot, "app", "wallet", "page.tsx");
      const pageSource = readFileSync(pageFile, "utf8");
      expect(
        pageSource.split("<h1>Wallet</h1>").length - 1,
        "app/wallet/page.tsx must hold the heading's markup exactly once (the edit below replaces the first one)",
      ).toBe(1);
      writeFileSync(pageFile, pageSource.replace("<h1>Wallet</h1>", `<h1>Wallet ${marker}</h1>`));
      await pollUntil(
        () => getText("/wallet", cookie),
        (body) => body.includes(`<h1>Wallet ${marker}</h1>`),
        COMPILE_TIMEOUT_MS,
      );

      // So does an edited route handler.
      expect(JSON.parse((await getText("/dev-probe")).slice(4))).toEqual({ version: "v1" });
      writeFileSync(join(copyRoot, PROBE_ROUTE), probeSource(marker));
      await pollUntil(
        () => getText("/dev-probe"),
        (body) => body === `200 {"version":"${marker}"}`,
        COMPILE_TIMEOUT_MS,
      );
      expect(dev.exitStatus(), "the dev stack restarted or died").toBeNull();

      // One stack per checkout: a demo or a second dev beside this one refuses at once, naming it.
      for (const script of ["demo", "dev"]) {
        const second = runInCopy(script, `dev-test-second-${script}`);
        expect((await exitOf(second, REFUSAL_TIMEOUT_MS)).code, second.recentOutput()).toBe(2);
        expect(second.recentOutput()).toContain(`npm run dev (pid ${String(runtime.pid)}`);
      }
      expect(await getText("/dev-probe")).toBe(`200 {"version":"${marker}"}`);

      // An idle connection dropped while the stack runs is worth a warning (a failover, a restarted server).
      // Each pool logs every connection it loses, so the stop below starts only once all of them have been told.
      const dropped = await terminateIdleAppConnections(String(runtime.databaseUrl));
      expect(dropped).toBeGreaterThan(0);
      await pollUntil(
        async () => (dev?.recentOutput() ?? "").split("idle database connection dropped").length - 1,
        (warnings) => warnings >= dropped,
        COMPILE_TIMEOUT_MS,
      );

      // The stop below must have something to drop: the stack's reconciler (a pass every 10 s) holds an idle
      // connection again, as it does whenever a developer presses Ctrl-C.
      await pollUntil(
        () => idleAppConnectionsOf(String(runtime.databaseUrl), Number(runtime.pid)),
        (idle) => idle > 0,
        COMPILE_TIMEOUT_MS,
      );

      // Ctrl-C (SIGINT to the foreground process group) stops everything and removes the runtime file and lock.
      signalGroup(dev.pid, "SIGINT");
      // 130 (128 + SIGINT) once every cleanup ran; 0 here meant Node ran out of work in the middle of them (the
      // embedded PostgreSQL, signalled with the group, had already exited and its stop() waited forever).
      expect(await exitOf(dev, STOP_TIMEOUT_MS)).toEqual({ code: 130, signal: null });
      // A deliberate stop is no incident: the app and this stack's own clients stop before PostgreSQL does, so no
      // connection in use is dropped and nothing is logged at warning level or above.
      const stopOutput = dev.recentOutput().split("received SIGINT: stopping services").at(-1) ?? "";
      expect(dev.recentOutput()).toContain("received SIGINT: stopping services");
      expect(warningLines(stopOutput), stopOutput).toEqual([]);
      expect(stopOutput).not.toContain("idle database connection dropped");
      expect(existsSync(runtimeFilePath(copyRoot))).toBe(false);
      expect(existsSync(checkoutLockPath(copyRoot))).toBe(false);
      // Next.js starts a detached telemetry flush as it stops (it finds nothing to send and exits by itself).
      await pollUntil(
        async () => processesInCopy().map(describeProcess),
        (left) => left.length === 0,
        LEFTOVER_EXIT_TIMEOUT_MS,
      );
      expect(existsSync(join(embeddedPostgresRoot(copyRoot), "data-demo", "postmaster.pid"))).toBe(false);
      expect(await isPortFree(appPort)).toBe(true);
      expect(await isPortFree(bankPort)).toBe(true);
    },
    START_TIMEOUT_MS + 3 * COMPILE_TIMEOUT_MS + 2 * REFUSAL_TIMEOUT_MS + STOP_TIMEOUT_MS + LEFTOVER_EXIT_TIMEOUT_MS,
  );
});
