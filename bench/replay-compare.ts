/**
 * Before/after of the replay path in ONE run: two built checkouts of the app (an older commit and this one) are
 * started in turn on the same port, against the same PostgreSQL, Redis and sandbox bank, and each gets the same
 * loads, alternating (base, this, base, this, ...), so machine noise hits both alike and the ratios compare like
 * with like (docs/benchmarks.md, "The replay path").
 *
 *   git worktree add --detach /tmp/wallet-base <commit> && (cd /tmp/wallet-base && cp -al <this>/node_modules . \
 *     && npx next build)
 *   node --import tsx bench/replay-compare.ts --base /tmp/wallet-base [--rounds 2] [--seconds 10]
 *
 * Loads per app: hot replays (autocannon, 32 keep-alive connections, stored payments of 1000 users), then a
 * duplicate storm of 1000 identical payments and one of 1000 identical top-ups (one connection each, as
 * bench/duplicate-storm.ts). Figures: requests/s and latency, and the CPU per request of the app and of PostgreSQL
 * from /proc. Prints the figures per round and the ratios this/base of their medians. Figures only: nothing is
 * asserted. Loopback only; stops everything it started.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { freePort, waitForHttp } from "../scripts/lib/ports";
import { randomAuthSecret } from "../scripts/lib/secrets";
import {
  childEnvironment,
  ensureBuilt,
  LOAD_OPS_PER_MINUTE,
  projectRoot,
  spawnApp,
  startBank,
  startStack,
} from "../scripts/lib/stack";
import { cpuSnapshot, cpuUse, findCpuTargets, type CpuUse } from "./cpu-accounting";
import { duplicateStorm, type DuplicateStormFigures } from "./duplicate-storm";
import { loadRoute, type HttpFigures } from "./http-load";
import { createHttpUsers } from "./http-users";
import { cell, renderTable } from "./report";
import { median as medianOf } from "./stats";
import { exitWithHelpIfAsked } from "../scripts/lib/cli-help";

/** As bench/run.ts: 32 connections, 1000 users, 1000-request storms, 2 s warm-up. */
const CONNECTIONS = 32;
const USERS = 1000;
const STORM_REQUESTS = 1000;
const WARMUP_SECONDS = 2;
const READY_TIMEOUT_MS = 60_000;
/**
 * A storm request's timeout: 60 s, four times bench/run.ts's, because this comparison is meant to run on a shared
 * machine where a storm can take longer than 15 s; a capped latency would hide the difference being measured.
 */
const STORM_TIMEOUT_MS = 60_000;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

interface Variant {
  readonly label: string;
  readonly dir: string;
}

interface Measured {
  readonly variant: string;
  readonly round: number;
  readonly replays: HttpFigures & { cpu: CpuUse };
  readonly storms: { route: string; rows: number; figures: DuplicateStormFigures; cpu: CpuUse }[];
}

/** The median of a non-empty list of figures (bench/stats.ts). */
const median = (values: number[]): number => medianOf(values) ?? Number.NaN;

const HELP = `usage: node --import tsx bench/replay-compare.ts --base <built checkout> [--rounds N] [--seconds N]

Hot replays of this checkout against a built base checkout, in turns on one stack.
Exit codes: 0 measured; 1 failed; 2 bad arguments.`;

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: { base: { type: "string" }, rounds: { type: "string" }, seconds: { type: "string" } },
  });
  const rounds = Number(values.rounds ?? "2");
  const seconds = Number(values.seconds ?? "10");
  const baseDir = values.base;
  if (!baseDir || !existsSync(join(baseDir, ".next", "BUILD_ID")) || !Number.isInteger(rounds) || rounds < 1) {
    say("usage: node --import tsx bench/replay-compare.ts --base <built checkout> [--rounds N] [--seconds N]");
    return 2;
  }
  ensureBuilt();
  const variants: Variant[] = [
    { label: "base", dir: baseDir },
    { label: "this", dir: projectRoot },
  ];
  const stack = await startStack({ withApp: false, label: "replay-compare" });
  const db = new pg.Pool({ connectionString: stack.databaseUrl, max: 2 });
  db.on("error", () => {});
  const port = await freePort();
  const appUrl = `http://127.0.0.1:${port}`;
  const bank = await startBank({
    env: { APP_URL: appUrl, BANK_WEBHOOK_SECRETS: stack.webhookSecrets, BANK_LOG_LEVEL: "warn" },
  });
  const appEnv: Record<string, string> = {
    ...childEnvironment(),
    DATABASE_URL: stack.databaseUrl,
    REDIS_URL: stack.redisUrl,
    BANK_URL: bank.url,
    APP_URL: appUrl,
    BETTER_AUTH_URL: appUrl,
    BANK_WEBHOOK_SECRETS: stack.webhookSecrets,
    BETTER_AUTH_SECRET: randomAuthSecret(),
    LOG_LEVEL: "warn",
    OPS_PER_MINUTE: LOAD_OPS_PER_MINUTE,
  };
  const results: Measured[] = [];
  try {
    const tag = randomBytes(3).toString("hex");
    const users = await createHttpUsers(db, USERS + 2, tag);
    const stormUser = users[USERS]!;
    // Top-ups need room under MAX_BALANCE_MINOR: this user's funding is taken back, so its storms reach the bank.
    const topupUser = users[USERS + 1]!;
    await db.query("UPDATE wallets SET balance_minor = 0 WHERE user_id = $1", [topupUser.id]);
    let stored = false;
    for (let round = 1; round <= rounds; round++) {
      for (const variant of variants) {
        const app = spawnApp({ root: variant.dir, port, env: { ...appEnv, PORT: String(port) }, log: "silent" });
        try {
          await waitForHttp(`${appUrl}/api/v1/health`, READY_TIMEOUT_MS);
          const targets = findCpuTargets({ app: port, postgres: Number(new URL(stack.databaseUrl).port), bank: null });
          if (!stored) {
            say(`storing ${USERS} payments to replay`);
            for (let start = 0; start < USERS; start += 8) {
              await Promise.all(
                users.slice(start, start + 8).map(async (user, offset) => {
                  const response = await fetch(`${appUrl}/api/v1/payments`, {
                    method: "POST",
                    headers: { "content-type": "application/json", authorization: `Bearer ${user.token}` },
                    body: `{"orderId":"hp-${tag}-${start + offset}","amount":1}`,
                  });
                  await response.arrayBuffer();
                  if (response.status !== 201) throw new Error(`storing a payment answered ${response.status}`);
                }),
              );
            }
            stored = true;
          }
          let sequence = 0;
          const next = () => {
            const n = sequence++ % USERS;
            return { body: `{"orderId":"hp-${tag}-${n}","amount":1}`, token: users[n]!.token };
          };
          say(`round ${round}, ${variant.label}: hot replays, ${WARMUP_SECONDS} s warm-up, ${seconds} s measured`);
          await loadRoute({
            appUrl,
            path: "/api/v1/payments",
            connections: CONNECTIONS,
            durationS: WARMUP_SECONDS,
            next,
          });
          const before = cpuSnapshot(targets);
          const replays = await loadRoute({
            appUrl,
            path: "/api/v1/payments",
            connections: CONNECTIONS,
            durationS: seconds,
            next,
          });
          const replayCpu = cpuUse(before, cpuSnapshot(targets));
          const storms: Measured["storms"] = [];
          const key = `dup-${tag}-${variant.label}-${round}`;
          for (const [route, path, body, type] of [
            ["payments", "/api/v1/payments", `{"orderId":"${key}","amount":1}`, "payment"],
            ["top-ups", "/api/v1/topups", `{"refId":"${key}","amount":100}`, "topup"],
          ] as const) {
            say(`round ${round}, ${variant.label}: storm of ${STORM_REQUESTS} identical ${route}`);
            const stormBefore = cpuSnapshot(targets);
            const figures = await duplicateStorm({
              appUrl,
              path,
              token: (type === "topup" ? topupUser : stormUser).token,
              body,
              count: STORM_REQUESTS,
              timeoutMs: STORM_TIMEOUT_MS,
            });
            const cpu = cpuUse(stormBefore, cpuSnapshot(targets));
            const counted = await db.query<{ count: string }>(
              "SELECT count(*)::text AS count FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id = $3",
              [(type === "topup" ? topupUser : stormUser).id, type, key],
            );
            storms.push({ route, rows: Number(counted.rows[0]!.count), figures, cpu });
          }
          results.push({ variant: variant.label, round, replays: { ...replays, cpu: replayCpu }, storms });
        } finally {
          await app.stop();
        }
      }
    }
  } finally {
    await db.end().catch(() => {});
    await bank.stop();
    await stack.stop();
  }

  const perRequest = (cpuMs: number, requests: number) => (requests > 0 ? cpuMs / requests : 0);
  const rows = results.flatMap((r) => [
    [
      `${r.round} ${r.variant}`,
      "hot replays",
      cell(r.replays.requestsPerS),
      cell(r.replays.p50Ms),
      cell(r.replays.p99Ms),
      cell(perRequest(r.replays.cpu.app, r.replays.total), 3),
      cell(perRequest(r.replays.cpu.postgres, r.replays.total), 3),
      `${r.replays.non2xx} non-2xx`,
    ],
    ...r.storms.map((s) => [
      `${r.round} ${r.variant}`,
      `storm ${s.route}`,
      "",
      cell(s.figures.p50Ms),
      cell(s.figures.p99Ms),
      cell(perRequest(s.cpu.app, s.figures.requests), 3),
      cell(perRequest(s.cpu.postgres, s.figures.requests), 3),
      `${s.rows} row, ${s.figures.distinctStoredBodies} body, ${Object.entries(s.figures.statuses)
        .map(([status, count]) => `${status}x${count}`)
        .join(" ")}`,
    ]),
  ]);
  const out: string[] = [];
  out.push(`replay path, base ${baseDir} vs this checkout, ${rounds} round(s), ${new Date().toISOString()}`);
  out.push(
    renderTable(["round", "load", "req/s", "p50 ms", "p99 ms", "app ms/req", "postgres ms/req", "checks"], rows),
  );
  const figure = (variant: string, pick: (m: Measured) => number) =>
    median(results.filter((r) => r.variant === variant).map(pick));
  const compare = (name: string, pick: (m: Measured) => number, digits = 3) => {
    const base = figure("base", pick);
    const mine = figure("this", pick);
    return [name, cell(base, digits), cell(mine, digits), cell(base > 0 ? mine / base : null, 2)];
  };
  const storm = (m: Measured, route: string) => m.storms.find((s) => s.route === route)!;
  out.push("");
  out.push("medians over the rounds; ratio = this / base");
  out.push(
    renderTable(
      ["figure", "base", "this", "ratio"],
      [
        compare("hot replays req/s", (m) => m.replays.requestsPerS, 0),
        compare("hot replays app CPU ms/req", (m) => perRequest(m.replays.cpu.app, m.replays.total)),
        compare("hot replays postgres CPU ms/req", (m) => perRequest(m.replays.cpu.postgres, m.replays.total)),
        compare("hot replays app + postgres CPU ms/req", (m) =>
          perRequest(m.replays.cpu.app + m.replays.cpu.postgres, m.replays.total),
        ),
        ...["payments", "top-ups"].flatMap((route) => {
          const perStormRequest = (m: Measured, cpuMs: (cpu: CpuUse) => number) =>
            perRequest(cpuMs(storm(m, route).cpu), storm(m, route).figures.requests);
          return [
            compare(`storm ${route} p99 ms`, (m) => storm(m, route).figures.p99Ms ?? 0, 0),
            compare(`storm ${route} app CPU ms/req`, (m) => perStormRequest(m, (cpu) => cpu.app)),
            compare(`storm ${route} postgres CPU ms/req`, (m) => perStormRequest(m, (cpu) => cpu.postgres)),
            compare(`storm ${route} app + postgres CPU ms/req`, (m) =>
              perStormRequest(m, (cpu) => cpu.app + cpu.postgres),
            ),
          ];
        }),
      ],
    ),
  );
  process.stdout.write(`${out.join("\n")}\n`);
  return 0;
}

main()
  .catch((error: unknown) => {
    say(`replay-compare could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 2;
  })
  .then((code) => process.exit(code));
