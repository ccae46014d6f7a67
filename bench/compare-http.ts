/**
 * One HTTP route of this checkout against the same route of another checkout, in one run, alternating, so that the
 * machine's drift (other tenants, heap growth, a slower minute) falls on both sides alike. On the 2-core reference
 * machine the floor route alone moved from 922 to 643 requests/s within one `npm run bench`, and by 1.6x between two
 * runs minutes apart: a change's effect is measured here, as a ratio of figures taken side by side.
 *
 *   node --import tsx bench/compare-http.ts --compare DIR [--route topups|payments|noop] [--rounds N] [--seconds N]
 *        [--other-env KEY=VALUE,...]
 *
 * `--other-env` adds settings to the other side's app only; with `--compare .` it compares this checkout with itself
 * under another setting, e.g. `--compare . --other-env APP_HEAP_MB=0` (the app without its heap bound).
 *
 * DIR is another checkout with its own node_modules (e.g. `git worktree add --detach DIR <commit>`, then
 * `cp -al node_modules DIR/`, then `npm run postinstall` in DIR for its generated clients); both are built first when their sources changed. One PostgreSQL and one Redis serve
 * both (a database each, migrated with its own checkout's migrations); each checkout runs its own sandbox bank,
 * whose webhooks go to its own app, and its own `next start`. Each side is warmed up until steady
 * (bench/http-load.ts), then the sides take turns, ABBA, `--rounds` times (default 5), `--seconds` each (default
 * 8), 32 connections. For top-ups, every turn starts once neither side has an unfinished top-up (the webhooks of
 * earlier turns have all landed: a build whose webhooks fall behind would otherwise do its backlog during the other
 * build's turn), and the throughput is top-ups credited per second in the turn (./settlement.ts). Printed: requests
 * per second, credited top-ups per second, and CPU per request (per credit for top-ups) of the app, PostgreSQL and
 * the bank for each turn, and the ratios this / other of their medians. PostgreSQL's CPU includes its background
 * processes (autovacuum, checkpoints), which land on whichever side is running: comparing a checkout with a copy of itself (an A/A run) moved a side's PostgreSQL CPU
 * per top-up by up to 1.6x between turns, so judge on several rounds. Figures only; loopback only; stops
 * everything it started, also on errors and Ctrl-C.
 */
import { randomBytes } from "node:crypto";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { migrate } from "../lib/migrate";
import { freePort, waitForHttp } from "../scripts/lib/ports";
import type { Service } from "../scripts/lib/processes";
import { randomAuthSecret } from "../scripts/lib/secrets";
import {
  childEnvironment,
  ensureBuilt,
  LOAD_OPS_PER_MINUTE,
  projectRoot,
  spawnApp,
  startBank,
  startStack,
  type RunningBank,
} from "../scripts/lib/stack";
import { cpuSnapshot, cpuUse, findCpuTargets, type CpuTargets } from "./cpu-accounting";
import { loadRoute, warmUntilSteady, type RequestGenerator } from "./http-load";
import { createHttpUsers } from "./http-users";
import { renderTable } from "./report";
import { creditedTopupsBetween, waitUntilSettled } from "./settlement";
import { median } from "./stats";
import { exitWithHelpIfAsked } from "../scripts/lib/cli-help";

const ROUTES = {
  noop: "/api/v1/bench/noop",
  payments: "/api/v1/payments",
  topups: "/api/v1/topups",
} as const;
type Route = keyof typeof ROUTES;

/** As bench/run.ts: 32 connections over 1000 funded users. */
const CONNECTIONS = 32;
const USERS = 1000;
/** Between turns: the sandbox bank settles 200 ms after a charge and delivers its webhook then. */
const PAUSE_MS = 1500;
/** `next start` is ready in a few seconds; 60 s only turns a hung start into an error. */
const READY_TIMEOUT_MS = 60_000;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** One checkout's side: its app, bank, database and users. */
interface Side {
  readonly name: string;
  readonly appUrl: string;
  readonly targets: CpuTargets;
  readonly next: RequestGenerator;
  /** The side's own database. */
  readonly db: pg.Pool;
}

interface Turn {
  readonly requestsPerS: number;
  /** Top-ups credited per second in the turn (null for other routes). */
  readonly creditedPerS: number | null;
  readonly requests: number;
  readonly non2xx: number;
  readonly appMs: number;
  readonly postgresMs: number;
  readonly bankMs: number;
}

const HELP = `usage: node --import tsx bench/compare-http.ts --compare DIR [--route topups|payments|noop] [--rounds N] [--seconds N]
       [--other-env KEY=VALUE,...]

One HTTP route of this checkout against the same route of the checkout in DIR, in turns (ABBA) on one stack,
32 connections: requests/s, credited top-ups/s and CPU per request (per credit for top-ups) of the app, PostgreSQL
and the bank, medians of the turns and their ratios. DIR needs its own node_modules and generated clients.
  --compare DIR   the other checkout (required)
  --route NAME    topups (default), payments or noop
  --rounds N      turns per side (default 5)
  --seconds N     length of a turn (default 8)
  --other-env L   settings for the other side's app only, KEY=VALUE,... (e.g. --compare . --other-env APP_HEAP_MB=0)
Exit codes: 0 measured; 1 failed; 2 bad arguments.`;

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  const { values } = parseArgs({
    options: {
      compare: { type: "string" },
      route: { type: "string", default: "topups" },
      rounds: { type: "string", default: "5" },
      seconds: { type: "string", default: "8" },
      "other-env": { type: "string", default: "" },
    },
  });
  const otherEnv: Record<string, string> = {};
  for (const pair of values["other-env"].split(",").filter(Boolean)) {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(pair.trim());
    if (!match) {
      say(`--other-env takes KEY=VALUE,...; not ${pair}`);
      return 2;
    }
    otherEnv[match[1]!] = match[2]!;
  }
  const route = values.route as Route;
  if (!values.compare || !(route in ROUTES)) {
    say(
      "usage: node --import tsx bench/compare-http.ts --compare DIR [--route topups|payments|noop] [--rounds N] [--seconds N]",
    );
    return 2;
  }
  const other = resolve(values.compare);
  const rounds = Math.max(1, Number(values.rounds));
  const seconds = Math.max(1, Number(values.seconds));
  ensureBuilt(projectRoot);
  ensureBuilt(other);

  // The apps' ceiling is raised: the users are funded at 10^12 (bench/http-users.ts), and the default would refuse
  // every top-up before the bank (case C15), as bench/run.ts explains.
  const stack = await startStack({ withApp: false, label: "compare-http" });
  const services: Service[] = [];
  const pools: pg.Pool[] = [];
  const banks: RunningBank[] = [];
  const admin = new pg.Pool({ connectionString: stack.databaseUrl, max: 2, application_name: "compare-http" });
  admin.on("error", () => {});
  try {
    const sides: Side[] = [];
    for (const [name, root] of [
      ["this", projectRoot],
      ["other", other],
    ] as const) {
      const database = `compare_${name}`;
      await admin.query(`CREATE DATABASE ${database}`);
      const url = new URL(stack.databaseUrl);
      url.pathname = `/${database}`;
      const databaseUrl = url.toString();
      await migrate(databaseUrl, { migrationsDir: join(root, "prisma", "migrations") });
      const [appPort, bankPort] = await Promise.all([freePort(), freePort()]);
      const appUrl = `http://127.0.0.1:${appPort}`;
      const bank = await startBank({
        root,
        env: {
          BANK_PORT: String(bankPort),
          APP_URL: appUrl,
          BANK_WEBHOOK_SECRETS: stack.webhookSecrets,
          BANK_STATE_FILE: join(stack.logDir, `bank-${name}.json`),
          BANK_LOG_LEVEL: "warn",
          // As many webhooks in flight as load connections, as bench/run.ts (a top-up is a request and a webhook).
          BANK_WEBHOOK_CONCURRENCY: String(CONNECTIONS),
        },
        log: join(stack.logDir, `bank-${name}.log`),
      });
      banks.push(bank);
      const app = spawnApp({
        name: `app-${name}`,
        root,
        port: appPort,
        env: {
          ...childEnvironment(),
          DATABASE_URL: databaseUrl,
          REDIS_URL: stack.redisUrl,
          PORT: String(appPort),
          BANK_URL: bank.url,
          APP_URL: appUrl,
          BETTER_AUTH_URL: appUrl,
          BANK_WEBHOOK_SECRETS: stack.webhookSecrets,
          BETTER_AUTH_SECRET: randomAuthSecret(),
          LOG_LEVEL: "warn",
          OPS_PER_MINUTE: LOAD_OPS_PER_MINUTE,
          MAX_BALANCE_MINOR: String(2 ** 52),
          ...(name === "other" ? otherEnv : {}),
        },
        log: join(stack.logDir, `app-${name}.log`),
      });
      services.push(app);
      await waitForHttp(`${appUrl}/api/v1/health`, READY_TIMEOUT_MS);
      // Kept for the run: the top-ups' settlement is read from the side's ledger (./settlement.ts).
      const db = new pg.Pool({ connectionString: databaseUrl, max: 2, application_name: "compare-http" });
      db.on("error", () => {});
      pools.push(db);
      const tag = randomBytes(3).toString("hex");
      const users = await createHttpUsers(db, USERS, tag);
      let sequence = 0;
      const next: RequestGenerator =
        route === "noop"
          ? () => ({ body: "{}", token: null })
          : () => {
              const n = sequence++;
              const body =
                route === "payments"
                  ? `{"orderId":"cmp-${tag}-${n}","amount":1}`
                  : `{"refId":"cmp-${tag}-${n}","amount":100}`;
              return { body, token: users[n % users.length]!.token };
            };
      const targets = findCpuTargets({ app: appPort, postgres: Number(url.port), bank: bankPort });
      if (targets.appGroup === null || targets.postmaster === null || targets.bankGroup === null)
        throw new Error(`compare-http: the ${name} side's processes were not all found`);
      sides.push({ name, appUrl, targets, next, db });
    }

    const path = ROUTES[route];
    for (const side of sides) {
      const warm = await warmUntilSteady({ appUrl: side.appUrl, path, connections: CONNECTIONS, next: side.next });
      say(`${side.name}: warm-up windows ${warm.windowsRps.map((rps) => rps.toFixed(0)).join(", ")} req/s`);
    }
    const turns: Record<string, Turn[]> = { this: [], other: [] };
    for (let round = 0; round < rounds; round++) {
      // ABBA: each side goes first in every other round.
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        // Both sides' webhooks of earlier turns have landed: nothing of theirs runs during this turn.
        if (route === "topups") await Promise.all(sides.map((each) => waitUntilSettled(each.db)));
        await new Promise((resolveTimer) => setTimeout(resolveTimer, PAUSE_MS));
        const before = cpuSnapshot(side.targets);
        const from = new Date();
        const figures = await loadRoute({
          appUrl: side.appUrl,
          path,
          connections: CONNECTIONS,
          durationS: seconds,
          next: side.next,
        });
        const cpu = cpuUse(before, cpuSnapshot(side.targets));
        const credited = route === "topups" ? await creditedTopupsBetween(side.db, from, new Date()) : null;
        // Top-ups are counted when credited (./settlement.ts); other routes when answered.
        const requests = Math.max(1, credited ?? figures.total);
        const turn: Turn = {
          requestsPerS: figures.requestsPerS,
          creditedPerS: credited === null ? null : credited / seconds,
          requests: figures.total,
          non2xx: figures.non2xx,
          appMs: cpu.app / requests,
          postgresMs: cpu.postgres / requests,
          bankMs: cpu.bank / requests,
        };
        turns[side.name]!.push(turn);
        say(
          `round ${round + 1} ${side.name}: ${turn.requestsPerS.toFixed(0)} req/s${turn.creditedPerS === null ? "" : `, ${turn.creditedPerS.toFixed(0)} credited/s`}, CPU ms/${credited === null ? "request" : "credit"} app ${turn.appMs.toFixed(3)}, postgres ${turn.postgresMs.toFixed(3)}, bank ${turn.bankMs.toFixed(3)}${turn.non2xx ? `, ${turn.non2xx} non-2xx` : ""}`,
        );
      }
    }

    const medianOf = (list: Turn[], pick: (turn: Turn) => number) => median(list.map(pick)) ?? Number.NaN;
    const per = route === "topups" ? "credit" : "req";
    const fields: Array<[string, (turn: Turn) => number, number]> = [
      ["req/s", (turn) => turn.requestsPerS, 0],
      ...(route === "topups"
        ? ([["credited top-ups/s", (turn) => turn.creditedPerS ?? Number.NaN, 0]] as Array<
            [string, (turn: Turn) => number, number]
          >)
        : []),
      [`app CPU ms/${per}`, (turn) => turn.appMs, 3],
      [`postgres CPU ms/${per}`, (turn) => turn.postgresMs, 3],
      [`bank CPU ms/${per}`, (turn) => turn.bankMs, 3],
    ];
    const rows = fields.map(([label, pick, digits]) => {
      const mine = medianOf(turns.this!, pick);
      const theirs = medianOf(turns.other!, pick);
      return [label, mine.toFixed(digits), theirs.toFixed(digits), theirs > 0 ? (mine / theirs).toFixed(2) : "n/a"];
    });
    process.stdout.write(
      `POST ${path}, ${rounds} round(s) of ${seconds} s per side, ${CONNECTIONS} connections; other = ${other}` +
        `${values["other-env"] ? ` with ${values["other-env"]}` : ""}\n` +
        `${renderTable(["median over the turns", "this", "other", "this / other"], rows)}\n`,
    );
    const refused = [...turns.this!, ...turns.other!].reduce((sum, turn) => sum + turn.non2xx, 0);
    if (refused > 0) say(`compare-http: ${refused} non-2xx answers: the figures include refusals`);
    return 0;
  } finally {
    await admin.end().catch(() => {});
    await Promise.all(pools.map((db) => db.end().catch(() => {})));
    await Promise.all(services.map((service) => service.stop()));
    await Promise.all(banks.map((bank) => bank.stop()));
    await stack.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    say(`compare-http failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(1);
  },
);
