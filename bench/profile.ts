/**
 * A V8 CPU profile of the app under one benchmark load, to show where the app's time per request goes when a target
 * in docs/benchmarks.md is missed (that page cites its output).
 *
 *   node --import tsx bench/profile.ts [--route noop|payments|replays|topups|storm] [--seconds N] [--out file]
 *   node --experimental-websocket --import tsx bench/profile.ts --memory [--seconds N] [--app-node-options="..."]
 *        [--snapshots DIR]
 *
 * `--memory` runs bench/memory-probe.ts instead: the app under `--inspect` (plus `--app-node-options`), the bench's
 * HTTP phases and storms, and its memory after each; `--snapshots DIR` also writes heap snapshots of the app there
 * (read them with bench/heap-snapshots.ts).
 *
 * Starts PostgreSQL and Redis (scripts/lib/stack.ts), the sandbox bank, and `next start` under
 * `node --cpu-prof` (V8's sampling profiler; `--cpu-prof` is refused in NODE_OPTIONS, so the app is spawned here
 * rather than by startStack), loads the route with autocannon at 32 connections (2 s warm-up, then N s) or, for
 * `storm`, sends five duplicate storms of 1000 identical payments (bench/duplicate-storm.ts, one key each), stops the
 * app with SIGTERM (Next exits cleanly and V8 writes the profile), and prints the self time of the busiest
 * functions and of each package, as shares of the app's busy (non-idle) time. Loopback only; stops everything.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { freePort, waitForHttp } from "../scripts/lib/ports";
import type { Service } from "../scripts/lib/processes";
import { randomAuthSecret, randomWebhookSecret } from "../scripts/lib/secrets";
import { ensureBuilt, LOAD_OPS_PER_MINUTE, projectRoot, spawnApp, spawnBank, startStack } from "../scripts/lib/stack";
import { duplicateStorm } from "./duplicate-storm";
import { loadRoute, type RequestGenerator } from "./http-load";
import { createHttpUsers } from "./http-users";
import { probeMemory } from "./memory-probe";
import { renderTable } from "./report";
import { exitWithHelpIfAsked } from "../scripts/lib/cli-help";

const ROUTES = ["noop", "payments", "replays", "topups", "storm"] as const;
type Route = (typeof ROUTES)[number];

/** The benchmark's load: 32 connections, 2 s of warm-up as in bench/run.ts. */
const CONNECTIONS = 32;
const WARMUP_SECONDS = 2;
/** Users the load is spread over, as in bench/run.ts. */
const USERS = 1000;
/** Storms of the `storm` route, and the identical requests of each (as bench/run.ts's duplicate storm). */
const STORMS = 5;
const STORM_REQUESTS = 1000;
/** How long the app may take to write its profile and exit after SIGTERM. */
const PROFILE_WRITE_WAIT_MS = 120_000;
/** Rows printed: the 25 busiest functions cover most of the busy time; the rest is a long tail. */
const TOP_FUNCTIONS = 25;
/** `next start` is ready in about a second; 60 s only turns a hung start into an error. */
const READY_TIMEOUT_MS = 60_000;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** The package (or "app chunk", "node internals", a V8 pseudo-frame) a profile frame belongs to. */
function packageOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith("(") ? functionName : "(native)";
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) {
    const name = modules[1]!;
    // Next's server bundles its own copies of react-dom and friends under next/dist/compiled.
    const compiled = /next\/dist\/compiled\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    return compiled ? `next (compiled ${compiled[1]})` : name;
  }
  if (url.startsWith("node:")) return "node internals";
  if (url.includes("/.next/server/")) return "app bundle (.next/server: app/ and lib/)";
  return url.replace(projectRoot, ".");
}

/** Self time per function and per package from a .cpuprofile, idle excluded. */
function summarise(profile: CpuProfile): {
  busyMs: number;
  idleMs: number;
  functions: [string, number][];
  packages: [string, number][];
} {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, index) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  let idleUs = 0;
  let busyUs = 0;
  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    if (frame.functionName === "(idle)") {
      idleUs += us;
      continue;
    }
    busyUs += us;
    const file = frame.url
      ? `${frame.url.replace(/^.*\/(node_modules|\.next)\//, "$1/").slice(-70)}:${frame.lineNumber + 1}`
      : "";
    const name = `${frame.functionName || "(anonymous)"}${file ? ` ${file}` : ""}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    const pkg = packageOf(frame.url, frame.functionName);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  }
  const sorted = (map: Map<string, number>) =>
    [...map.entries()].sort((a, b) => b[1] - a[1]).map(([key, us]) => [key, us / 1000] as [string, number]);
  return { busyMs: busyUs / 1000, idleMs: idleUs / 1000, functions: sorted(functions), packages: sorted(packages) };
}

const HELP = `usage: node --import tsx bench/profile.ts [--route noop|payments|replays|topups|storm] [--seconds N] [--out file]
       node --experimental-websocket --import tsx bench/profile.ts --memory [--seconds N] [--app-node-options="..."]
            [--snapshots DIR]

A V8 CPU profile of the app under one route's load, or (--memory) the app's memory after each bench phase
(--snapshots DIR: and heap snapshots of it, for bench/heap-snapshots.ts).
Exit codes: 0 done; 1 failed; 2 bad arguments.`;

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: {
      route: { type: "string" },
      seconds: { type: "string" },
      out: { type: "string" },
      memory: { type: "boolean" },
      "app-node-options": { type: "string" },
      snapshots: { type: "string" },
    },
  });
  const route = (values.route ?? "payments") as Route;
  // 10 s by default, as bench/run.ts measures; 3..60 for the same reasons as there.
  const seconds = Number(values.seconds ?? "10");
  if (!ROUTES.includes(route) || !Number.isInteger(seconds) || seconds < 3 || seconds > 60) {
    say(
      `usage: node --import tsx bench/profile.ts [--route ${ROUTES.join("|")}] [--seconds 3..60] [--out file]\n` +
        '       node --experimental-websocket --import tsx bench/profile.ts --memory [--seconds 3..60] [--app-node-options="..."]',
    );
    return 2;
  }
  ensureBuilt();
  const stack = await startStack({ withApp: false, label: "bench-profile" });
  const profileDir = mkdtempSync(join(tmpdir(), "bench-profile-"));
  const bankStateDir = mkdtempSync(join(tmpdir(), "bench-profile-bank-"));
  const services: Service[] = [];
  // Two connections: the profile's own statements are three user-creation inserts.
  const db = new pg.Pool({ connectionString: stack.databaseUrl, max: 2 });
  db.on("error", () => {});
  try {
    const [appPort, bankPort, inspectPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const appUrl = `http://127.0.0.1:${appPort}`;
    const bankUrl = `http://127.0.0.1:${bankPort}`;
    // Secrets of this profile run only (case C16).
    const webhookSecrets = randomWebhookSecret();
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => key !== "DATABASE_URL" && key !== "REDIS_URL"),
    );
    const bank = spawnBank({
      env: {
        ...inherited,
        BANK_PORT: String(bankPort),
        APP_URL: appUrl,
        BANK_WEBHOOK_SECRETS: webhookSecrets,
        BANK_STATE_FILE: join(bankStateDir, "state.json"),
        BANK_LOG_LEVEL: "warn",
      },
      log: join(stack.logDir, "bank.log"),
    });
    services.push(bank);
    const app = spawnApp({
      port: appPort,
      // --memory: the inspector instead of the CPU profiler (bench/memory-probe.ts), plus the options compared.
      nodeArgs: values.memory
        ? [`--inspect=127.0.0.1:${inspectPort}`, ...(values["app-node-options"] ?? "").split(" ").filter(Boolean)]
        : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`],
      env: {
        ...inherited,
        DATABASE_URL: stack.databaseUrl,
        REDIS_URL: stack.redisUrl,
        PORT: String(appPort),
        BANK_URL: bankUrl,
        APP_URL: appUrl,
        BETTER_AUTH_URL: appUrl,
        BANK_WEBHOOK_SECRETS: webhookSecrets,
        BETTER_AUTH_SECRET: randomAuthSecret(),
        LOG_LEVEL: "warn",
        OPS_PER_MINUTE: LOAD_OPS_PER_MINUTE,
        // The users are funded at 10^12 minor units: under the default ceiling every top-up would be refused 422
        // before the bank (case C15), as in bench/run.ts.
        MAX_BALANCE_MINOR: String(2 ** 52),
      },
      log: join(stack.logDir, "app.log"),
    });
    services.push(app);
    await Promise.all([
      waitForHttp(`${bankUrl}/health`, READY_TIMEOUT_MS),
      waitForHttp(`${appUrl}/api/v1/health`, READY_TIMEOUT_MS),
    ]);

    const tag = Date.now().toString(36);
    // --memory: the bench's 1000 loading users plus the one its storms use.
    const users = await createHttpUsers(db, values.memory ? USERS + 1 : USERS, tag);
    if (values.memory) {
      const snapshotDir = values.snapshots ? resolve(values.snapshots) : undefined;
      if (snapshotDir) mkdirSync(snapshotDir, { recursive: true });
      process.stdout.write(`${await probeMemory({ appUrl, inspectPort, users, seconds, tag, snapshotDir })}\n`);
      return 0;
    }
    let sequence = 0;
    if (route === "replays") {
      for (const [index, user] of users.entries()) {
        const response = await fetch(`${appUrl}/api/v1/payments`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${user.token}` },
          body: `{"orderId":"hp-${tag}-${index}","amount":1}`,
        });
        await response.arrayBuffer();
      }
    }
    const generators: Record<Exclude<Route, "storm">, { path: string; next: RequestGenerator }> = {
      noop: { path: "/api/v1/bench/noop", next: () => ({ body: "{}", token: null }) },
      payments: {
        path: "/api/v1/payments",
        next: () => {
          const n = sequence++;
          return { body: `{"orderId":"bf-${tag}-${n}","amount":1}`, token: users[n % users.length]!.token };
        },
      },
      replays: {
        path: "/api/v1/payments",
        next: () => {
          const n = sequence++ % users.length;
          return { body: `{"orderId":"hp-${tag}-${n}","amount":1}`, token: users[n]!.token };
        },
      },
      topups: {
        path: "/api/v1/topups",
        next: () => {
          const n = sequence++;
          return { body: `{"refId":"bt-${tag}-${n}","amount":100}`, token: users[n % users.length]!.token };
        },
      },
    };
    let loadLine: string;
    if (route === "storm") {
      const p99s: string[] = [];
      for (let storm = 0; storm < STORMS; storm++) {
        say(`profile: storm ${storm + 1} of ${STORMS}: ${STORM_REQUESTS} identical payments`);
        const figures = await duplicateStorm({
          appUrl,
          path: "/api/v1/payments",
          token: users[0]!.token,
          body: `{"orderId":"ds-${tag}-${storm}","amount":1}`,
          count: STORM_REQUESTS,
          // A profile wants every request answered, also on a loaded machine, not cut at the usual 15 s.
          timeoutMs: 60_000,
        });
        p99s.push(`${figures.p99Ms?.toFixed(0)} ms`);
      }
      loadLine = `profile of next-server under ${STORMS} storms of ${STORM_REQUESTS} identical POST /api/v1/payments: p99 ${p99s.join(", ")}`;
    } else {
      const { path, next } = generators[route];
      say(`profile: ${route}: ${WARMUP_SECONDS} s warm-up, ${seconds} s measured`);
      await loadRoute({ appUrl, path, connections: CONNECTIONS, durationS: WARMUP_SECONDS, next });
      const figures = await loadRoute({ appUrl, path, connections: CONNECTIONS, durationS: seconds, next });
      loadLine = `profile of next-server under POST ${path} (${route}), ${CONNECTIONS} connections, ${seconds} s: ${figures.requestsPerS.toFixed(0)} req/s`;
    }
    // SIGTERM: Next exits through process.exit, and V8 writes the profile on exit. Writing a long run's profile on
    // a loaded machine can take longer than stop()'s 10 s before SIGKILL, so the exit is awaited here first.
    process.kill(app.pid, "SIGTERM");
    await Promise.race([app.exited, new Promise((resolve) => setTimeout(resolve, PROFILE_WRITE_WAIT_MS))]);
    await app.stop();
    const file = readdirSync(profileDir).find((name) => name.endsWith(".cpuprofile"));
    if (!file) throw new Error("the app wrote no CPU profile");
    // `--out <file>` keeps the profile (e.g. for Chrome DevTools' Performance panel, or inclusive times).
    if (values.out) copyFileSync(join(profileDir, file), values.out);
    const summary = summarise(JSON.parse(readFileSync(join(profileDir, file), "utf8")) as CpuProfile);
    const share = (ms: number) => `${((ms / summary.busyMs) * 100).toFixed(1)}%`;
    const out: string[] = [];
    out.push(loadLine);
    out.push(
      `busy ${(summary.busyMs / 1000).toFixed(1)} s, idle ${(summary.idleMs / 1000).toFixed(1)} s over the app's whole life (start-up and warm-up included)`,
    );
    out.push("");
    out.push(
      renderTable(
        ["package", "self ms", "share of busy"],
        summary.packages.slice(0, 15).map(([name, ms]) => [name, ms.toFixed(0), share(ms)]),
      ),
    );
    out.push("");
    out.push(
      renderTable(
        ["function (self time)", "self ms", "share of busy"],
        summary.functions.slice(0, TOP_FUNCTIONS).map(([name, ms]) => [name, ms.toFixed(0), share(ms)]),
      ),
    );
    process.stdout.write(`${out.join("\n")}\n`);
    return 0;
  } finally {
    await db.end().catch(() => {});
    await Promise.all(services.map((service) => service.stop()));
    await stack.stop();
    rmSync(profileDir, { recursive: true, force: true });
    rmSync(bankStateDir, { recursive: true, force: true });
  }
}

main()
  .catch((error: unknown) => {
    say(`profile could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 2;
  })
  .then((code) => process.exit(code));
