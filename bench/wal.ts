/**
 * `npx tsx bench/wal.ts [--before <checkout>] [--movements N]`: the WAL a movement writes, with this checkout's books
 * (docs/decisions/058) and without them. One throwaway PostgreSQL (scripts/lib/stack.ts), one database per schema:
 * - `before`: the migrations and function files of another checkout (`--before`, e.g. a worktree of 970ce8e, the
 *   commit before the books), migrated by this checkout's runner (lib/migrate.ts reads an older release's folders);
 * - `after`: this checkout's;
 * - `after, PK by entry`: this checkout's with the postings' primary key reordered to (entry_id, event, account,
 *   user_id): the same columns, so the same uniqueness, led by the increasing entry id instead of the user (a proposal,
 *   measured here only).
 * lib/ledger did not change with the books, so the same statements (this checkout's `decideRewardUnderWalletLock`
 * and `decidePaymentUnderWalletLock`, on a pool of each database) run against each. Per database and kind
 * (credits, then payments, over 10,000 wallets at concurrency 8), two phases: `cold`, right after a CHECKPOINT (each
 * page's first change writes its full-page image), and `warm`, the same number again with no checkpoint between.
 * Autovacuum is off for the run so that only the movements write. Each phase reports the insert position's delta
 * over its movements, and pg_walinspect's view of it: by resource manager (pg_get_wal_stats) and by relation
 * (pg_get_wal_block_info: full-page images and block data, per index and table). Figures only; writes
 * bench/results/wal-<UTC time>.json.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { migrate } from "../lib/migrate";
import {
  decidePaymentUnderWalletLock,
  decideRewardUnderWalletLock,
  jsonStoredResponse,
  operationKey,
  succeededRewardResponse,
  withTransactionRetry,
} from "../lib/ledger";
import { paymentResponses } from "../lib/payments/create-payment";
import { runCleanups } from "../scripts/lib/processes";
import { projectRoot, startStack } from "../scripts/lib/stack";
import { cpuSnapshot, cpuUse, findCpuTargets } from "./cpu-accounting";

const USERS = 10_000;
const CONCURRENCY = 8;
const AMOUNT_MINOR = 100;
const UNREACHED_MINOR = 2 ** 52;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

type Kind = "credit" | "payment";

async function moveOnce(db: pg.Pool, kind: Kind, userId: string, ref: string): Promise<void> {
  if (kind === "credit") {
    const params = { adId: ref, day: "2026-12-01", amount: AMOUNT_MINOR, currency: "USD" };
    const decided = await withTransactionRetry(() =>
      decideRewardUnderWalletLock(db, {
        key: operationKey(userId, "reward", ref),
        amountMinor: AMOUNT_MINOR,
        currency: "USD",
        params,
        day: "2026-12-01",
        capMinor: UNREACHED_MINOR,
        maxBalanceMinor: UNREACHED_MINOR,
        succeeded: succeededRewardResponse(params, AMOUNT_MINOR, "USD"),
        refusal: jsonStoredResponse(422, { code: "balance_limit_exceeded" }),
      }),
    );
    if (decided.kind !== "decided" || decided.entry.status !== "succeeded") throw new Error(`credit ${ref} refused`);
  } else {
    const decided = await withTransactionRetry(() =>
      decidePaymentUnderWalletLock(db, {
        key: operationKey(userId, "payment", ref),
        amountMinor: AMOUNT_MINOR,
        currency: "USD",
        params: { amount: AMOUNT_MINOR, currency: "USD" },
        responses: paymentResponses(ref, AMOUNT_MINOR, "USD"),
      }),
    );
    if (!decided) throw new Error(`payment ${ref} was not claimed`);
  }
}

/** `count` movements of `kind` in {@link CONCURRENCY} loops over random users; returns the seconds taken. */
async function move(db: pg.Pool, kind: Kind, count: number): Promise<number> {
  const run = randomUUID().slice(0, 8);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const index = next++;
        await moveOnce(db, kind, String(1 + Math.floor(Math.random() * USERS)), `w${run}-${index}`);
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

interface PhaseFigures {
  database: string;
  kind: Kind;
  phase: "cold" | "warm";
  movements: number;
  seconds: number;
  /** Movements per second and PostgreSQL's and this process's CPU per movement (ms), for the same phase. */
  perS: number;
  postgresCpuMs: number;
  nodeCpuMs: number;
  walBytes: number;
  walBytesPerMovement: number;
  byResourceManager: { resourceManager: string; records: number; recordBytes: number; fpiBytes: number }[];
  byRelation: { relation: string; blocks: number; fpis: number; fpiBytes: number; dataBytes: number }[];
}

/** Per resource manager and per relation (this database's), between two LSNs, through pg_walinspect. */
async function inspect(db: pg.Pool, start: string, end: string) {
  const stats = await db.query<{ resource_manager: string; count: string; record_size: string; fpi_size: string }>(
    `SELECT "resource_manager/record_type" AS resource_manager, count::text, record_size::text, fpi_size::text
       FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, false) WHERE count > 0 ORDER BY record_size + fpi_size DESC`,
    [start, end],
  );
  const blocks = await db.query<{
    relation: string;
    blocks: string;
    fpis: string;
    fpi_bytes: string;
    data_bytes: string;
  }>(
    `SELECT COALESCE(pg_filenode_relation(CASE WHEN b.reltablespace = (SELECT dattablespace FROM pg_database
                                                                       WHERE datname = current_database())
                                               THEN 0 ELSE b.reltablespace END, b.relfilenode)::regclass::text,
                     'filenode ' || b.relfilenode) || CASE WHEN b.relforknumber <> 0 THEN ' fork ' || b.relforknumber
                                                           ELSE '' END AS relation,
            count(*)::text AS blocks, count(*) FILTER (WHERE b.block_fpi_length > 0)::text AS fpis,
            sum(b.block_fpi_length)::text AS fpi_bytes, sum(b.block_data_length)::text AS data_bytes
       FROM pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false) b
      WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
      GROUP BY 1 ORDER BY sum(b.block_fpi_length) + sum(b.block_data_length) DESC`,
    [start, end],
  );
  return {
    byResourceManager: stats.rows.map((row) => ({
      resourceManager: row.resource_manager,
      records: Number(row.count),
      recordBytes: Number(row.record_size),
      fpiBytes: Number(row.fpi_size),
    })),
    byRelation: blocks.rows.map((row) => ({
      relation: row.relation,
      blocks: Number(row.blocks),
      fpis: Number(row.fpis),
      fpiBytes: Number(row.fpi_bytes),
      dataBytes: Number(row.data_bytes),
    })),
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: { before: { type: "string" }, movements: { type: "string" } },
  });
  const movements = Number(values.movements ?? 20_000);
  // lib/ledger's helpers log through lib/env's settings; the statements go to the pools passed to them.
  process.env.LOG_LEVEL = "warn";
  const stack = await startStack({ withApp: false, label: "wal" });
  process.env.DATABASE_URL = stack.databaseUrl;
  const admin = new pg.Pool({ connectionString: stack.databaseUrl, max: 1 });
  admin.on("error", () => {});
  const pools: pg.Pool[] = [];
  try {
    await admin.query("ALTER SYSTEM SET autovacuum = off");
    await admin.query("SELECT pg_reload_conf()");
    const databases: { name: string; root: string; pkByEntry: boolean }[] = [
      ...(values.before ? [{ name: "before", root: resolve(values.before), pkByEntry: false }] : []),
      { name: "after", root: projectRoot, pkByEntry: false },
      { name: "after, PK by entry", root: projectRoot, pkByEntry: true },
    ];
    const dbs: { name: string; pool: pg.Pool }[] = [];
    for (const [index, database] of databases.entries()) {
      const dbName = `wal_${index}`;
      await admin.query(`CREATE DATABASE ${dbName}`);
      const url = new URL(stack.databaseUrl);
      url.pathname = `/${dbName}`;
      await migrate(url.toString(), { migrationsDir: join(database.root, "prisma", "migrations") });
      const pool = new pg.Pool({ connectionString: url.toString(), max: CONCURRENCY + 1 });
      pool.on("error", () => {});
      pools.push(pool);
      await pool.query("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
      if (database.pkByEntry)
        await pool.query(
          `ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_pkey,
             ADD CONSTRAINT ledger_postings_pkey PRIMARY KEY (entry_id, event, account, user_id)`,
        );
      await pool.query(
        `INSERT INTO "user" ("id", "name", "email") SELECT i::text, 'WAL user ' || i, i || '@wal.test' FROM generate_series(1, $1::int) AS i`,
        [USERS],
      );
      // Old users, as in a live database: their rows hinted and frozen, so that a movement's foreign-key read of its
      // user does not set hint bits (a full-page image per user page after each checkpoint, with data checksums on).
      await pool.query('VACUUM (FREEZE, ANALYZE) "user"');
      dbs.push({ name: database.name, pool });
    }
    const phases: PhaseFigures[] = [];
    const targets = findCpuTargets({ app: null, postgres: Number(new URL(stack.databaseUrl).port), bank: null });
    // Credits first (they create the wallets), then payments, the databases in reverse order.
    for (const kind of ["credit", "payment"] as const) {
      for (const { name, pool } of kind === "credit" ? dbs : [...dbs].reverse()) {
        if (kind === "payment")
          await pool.query(
            "UPDATE wallets SET balance_minor = balance_minor + 1000000000, debt_minor = 0 WHERE balance_minor < 1000000000",
          );
        // Unmeasured warm-up: connections, plans, the first wallets.
        await move(pool, kind, 1000);
        for (const phase of ["cold", "warm"] as const) {
          if (phase === "cold") await pool.query("CHECKPOINT");
          const start = (await pool.query<{ lsn: string }>("SELECT pg_current_wal_insert_lsn()::text AS lsn")).rows[0]!
            .lsn;
          const cpuBefore = cpuSnapshot(targets);
          const seconds = await move(pool, kind, movements);
          const cpu = cpuUse(cpuBefore, cpuSnapshot(targets));
          const end = (await pool.query<{ lsn: string }>("SELECT pg_current_wal_insert_lsn()::text AS lsn")).rows[0]!
            .lsn;
          const bytes = Number(
            (
              await pool.query<{ bytes: string }>("SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS bytes", [
                end,
                start,
              ])
            ).rows[0]!.bytes,
          );
          const detail = await inspect(pool, start, end);
          phases.push({
            database: name,
            kind,
            phase,
            movements,
            seconds,
            perS: movements / seconds,
            postgresCpuMs: cpu.postgres / movements,
            nodeCpuMs: cpu.self / movements,
            walBytes: bytes,
            walBytesPerMovement: bytes / movements,
            ...detail,
          });
          say(
            `${name}, ${kind}, ${phase}: ${(bytes / movements).toFixed(0)} bytes per movement, ${(movements / seconds).toFixed(0)}/s, PostgreSQL ${(cpu.postgres / movements).toFixed(3)} ms each`,
          );
        }
      }
    }
    const out: string[] = [];
    out.push(`WAL per movement, ${movements} movements per phase over ${USERS} wallets at concurrency ${CONCURRENCY}`);
    out.push(
      "database | kind | phase | per s | PG CPU ms | bytes/movement | FPI bytes/movement | top relations (FPI+data bytes/movement)",
    );
    for (const phase of phases) {
      const fpi = phase.byResourceManager.reduce((sum, row) => sum + row.fpiBytes, 0);
      const top = phase.byRelation
        .slice(0, 8)
        .map((row) => `${row.relation} ${((row.fpiBytes + row.dataBytes) / phase.movements).toFixed(0)}`)
        .join(", ");
      out.push(
        `${phase.database} | ${phase.kind} | ${phase.phase} | ${phase.perS.toFixed(0)} | ${phase.postgresCpuMs.toFixed(3)} | ${phase.walBytesPerMovement.toFixed(0)} | ${(fpi / phase.movements).toFixed(0)} | ${top}`,
      );
    }
    process.stdout.write(`${out.join("\n")}\n`);
    const stamp = new Date()
      .toISOString()
      .replace(/:/g, "-")
      .replace(/\.\d+Z$/, "Z");
    const dir = join(projectRoot, "bench", "results");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `wal-${stamp}.json`);
    writeFileSync(file, `${JSON.stringify({ movements, users: USERS, concurrency: CONCURRENCY, phases }, null, 2)}\n`);
    say(`wal: wrote ${file}`);
    return 0;
  } finally {
    for (const pool of pools) await pool.end().catch(() => {});
    await admin.end().catch(() => {});
    await stack.stop();
  }
}

main()
  .catch((error: unknown) => {
    say(`wal could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 2;
  })
  .then(async (code) => {
    await runCleanups();
    process.exit(code);
  });
