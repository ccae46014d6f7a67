/**
 * `npx tsx bench/migrate-large.ts --before <checkout> [--entries N]`: the books' migration
 * (20261211100000_double_entry_books, docs/decisions/058) on a large ledger. Figures only; nothing asserts on time.
 *
 * 1. A throwaway PostgreSQL (scripts/lib/stack.ts) and a database migrated with the previous release's migrations and
 *    function files (`--before`, a worktree of 970ce8e, read by this checkout's runner).
 * 2. A consistent ledger of about N entries (default 1,000,000) written by SQL generate_series: 10,000 users; top-ups
 *    (succeeded, failed, processing), rewards, payments (succeeded, failed) and refunds of succeeded top-ups
 *    (succeeded, failed by the bank, processing), each with its transitions; each wallet's balance (or debt) is what
 *    its entries moved. Triggers are off while it is written (session_replication_role = replica): the rows are
 *    consistent by construction, and the outbox and notify triggers would only slow the fill. Then ANALYZE and a
 *    CHECKPOINT, as a live database would be.
 * 3. This checkout's migrator (lib/migrate.ts, what `npm run db:migrate` runs), timed, while probes on other
 *    connections sample the migrator's locks (pg_locks) every 100 ms, read wallets, ledger_entries and
 *    ledger_transitions (each on its own connection) every 100 ms, and try one write to wallets and one to
 *    ledger_entries a second in: how long each waited.
 * 4. The postings written, the migration's WAL and the tables' sizes; then the audit's book checks
 *    (lib/audit/checks/books.ts) and the balance check through runAudit.
 * Writes bench/results/migrate-large-<UTC time>.json.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { migrate } from "../lib/migrate";
import { runCleanups } from "../scripts/lib/processes";
import { projectRoot, startStack } from "../scripts/lib/stack";

const USERS = 10_000;

function say(message: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 23)} ${message}\n`);
}

// $3 first and $1 last entry number (before refunds), $2 users. Entry i belongs to user 1 + i % users; its kind is drawn from a slot that moves
// with i / users, so every user gets every kind. Times increase with i (20 ms apart).
const FILL_ENTRIES_SQL = `
INSERT INTO ledger_entries
  (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, failure_reason, bank_charge_id,
   created_at, updated_at)
SELECT 'm' || (1 + i % $2::int), k.type, 'g' || i, k.amount, 'USD', md5(i::text) || md5((-i)::text),
       jsonb_build_object('amount', k.amount, 'currency', 'USD'), k.status,
       CASE WHEN k.status = 'failed' THEN CASE k.type WHEN 'topup' THEN 'declined' ELSE 'insufficient_funds' END END,
       CASE WHEN k.type = 'topup' THEN 'ch_g' || i END,
       timestamptz '2026-01-01 00:00:00+00' + i * interval '20 milliseconds',
       timestamptz '2026-01-01 00:00:00+00' + i * interval '20 milliseconds' + interval '100 milliseconds'
  FROM generate_series($3::bigint, $1::bigint) AS i
 CROSS JOIN LATERAL (SELECT ((i / $2::int) * 37 + i % $2::int) % 20 AS slot) s
 CROSS JOIN LATERAL (
   SELECT CASE WHEN s.slot < 10 THEN 'topup' WHEN s.slot < 13 THEN 'reward' ELSE 'payment' END AS type,
          CASE WHEN s.slot < 10 THEN 10000 WHEN s.slot < 13 THEN 500 ELSE 2000 END::bigint AS amount,
          CASE WHEN s.slot < 10 THEN (CASE i % 10 WHEN 0 THEN 'failed' WHEN 1 THEN 'processing' ELSE 'succeeded' END)
               WHEN s.slot < 13 THEN 'succeeded'
               ELSE (CASE i % 10 WHEN 0 THEN 'failed' ELSE 'succeeded' END) END AS status
 ) k`;

// One refund of half the amount for every 8th succeeded top-up, a second after it: succeeded, failed by the bank or
// still processing, in turn; the top-up's refunded_minor counts the ones reserved or final (not failed).
const FILL_REFUNDS_SQL = `
INSERT INTO ledger_entries
  (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status, failure_reason, refunds_entry_id,
   created_at, updated_at)
SELECT t.user_id, 'refund', 'r' || t.id, t.amount_minor / 2, 'USD', md5('r' || t.id) || md5(t.id::text),
       jsonb_build_object('amount', t.amount_minor / 2, 'currency', 'USD'), r.status,
       CASE WHEN r.status = 'failed' THEN 'declined_by_bank' END, t.id,
       t.created_at + interval '1 second', t.created_at + interval '1100 milliseconds'
  FROM ledger_entries t
 CROSS JOIN LATERAL (SELECT (ARRAY['succeeded', 'failed', 'processing'])[1 + (t.id / 8) % 3] AS status) r
 WHERE t.type = 'topup' AND t.status = 'succeeded' AND t.id % 8 = 0`;

const REFUNDED_MINOR_SQL = `
UPDATE ledger_entries t SET refunded_minor = r.minor
  FROM (SELECT user_id, refunds_entry_id, sum(amount_minor) AS minor FROM ledger_entries
         WHERE type = 'refund' AND status <> 'failed' GROUP BY 1, 2) r
 WHERE t.user_id = r.user_id AND t.id = r.refunds_entry_id`;

// Every entry is claimed at its creation; a final one moved to its status 100 ms later, a processing one 50 ms later.
const FILL_TRANSITIONS_SQL = `
INSERT INTO ledger_transitions (user_id, entry_id, from_status, to_status, actor, attempt, at)
SELECT e.user_id, e.id, s.from_status, s.to_status, 'request', 1, e.created_at + s.after
  FROM ledger_entries e
 CROSS JOIN LATERAL (
   SELECT NULL::text AS from_status, 'initiated'::text AS to_status, interval '0' AS after
   UNION ALL
   SELECT 'initiated', e.status, CASE WHEN e.status = 'processing' THEN interval '50 milliseconds'
                                      ELSE interval '100 milliseconds' END
    WHERE e.status <> 'initiated'
 ) s`;

// Each wallet: what its entries moved (credits succeeded, minus payments succeeded, minus refunds reserved or final);
// a negative sum is a debt.
const FILL_WALLETS_SQL = `
INSERT INTO wallets (user_id, balance_minor, debt_minor, currency)
SELECT user_id, GREATEST(net, 0), GREATEST(-net, 0), 'USD'
  FROM (SELECT user_id,
               sum(CASE WHEN type IN ('topup', 'reward') AND status = 'succeeded' THEN amount_minor
                        WHEN type = 'payment' AND status = 'succeeded' THEN -amount_minor
                        WHEN type = 'refund' AND status <> 'failed' THEN -amount_minor
                        ELSE 0 END) AS net
          FROM ledger_entries GROUP BY user_id) w`;

interface LockSeen {
  relation: string;
  mode: string;
  granted: boolean;
  firstMs: number;
  lastMs: number;
}

/** One line per table: its modes, strongest last, and when they were first and last seen. */
function lockSummary(locks: readonly LockSeen[]): string[] {
  const tables = new Map<string, LockSeen[]>();
  for (const lock of locks) {
    if (
      /^\d+$/.test(lock.relation) ||
      lock.relation.includes("_idx") ||
      lock.relation.endsWith("_key") ||
      lock.relation.endsWith("_pkey")
    )
      continue;
    tables.set(lock.relation, [...(tables.get(lock.relation) ?? []), lock]);
  }
  return [...tables].map(([relation, seen]) => {
    const first = Math.min(...seen.map((lock) => lock.firstMs)) / 1000;
    const last = Math.max(...seen.map((lock) => lock.lastMs)) / 1000;
    return `  ${relation}: ${seen.map((lock) => `${lock.mode}${lock.granted ? "" : " (waiting)"}`).join(", ")} ${first.toFixed(1)}-${last.toFixed(1)}`;
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    strict: true,
    options: { before: { type: "string" }, entries: { type: "string" } },
  });
  if (!values.before) throw new Error("--before <checkout of the previous release> is required");
  const before = resolve(values.before);
  const entries = Number(values.entries ?? 1_000_000);
  // Refunds come on top of the base entries: about 1 in 19 of them (every 8th of the ~45% succeeded top-ups).
  const baseEntries = Math.round(entries / (1 + 0.45 / 8));
  process.env.LOG_LEVEL = "warn";
  const stack = await startStack({ withApp: false, label: "migrate-large" });
  const admin = new pg.Pool({ connectionString: stack.databaseUrl, max: 1 });
  admin.on("error", () => {});
  const pools: pg.Pool[] = [];
  const connect = (max: number, name: string) => {
    const pool = new pg.Pool({ connectionString: url.toString(), max, application_name: name });
    pool.on("error", () => {});
    pools.push(pool);
    return pool;
  };
  const url = new URL(stack.databaseUrl);
  url.pathname = "/migrate_large";
  try {
    await admin.query("CREATE DATABASE migrate_large");
    const previous = await migrate(url.toString(), { migrationsDir: join(before, "prisma", "migrations") });
    say(`previous release: ${previous.applied.length} migrations, ${previous.functionsApplied.length} function files`);
    const db = connect(1, "fill");
    const fillStarted = Date.now();
    await db.query(
      `INSERT INTO "user" ("id", "name", "email") SELECT 'm' || i, 'Large user ' || i, 'm' || i || '@large.test' FROM generate_series(1, $1::int) AS i`,
      [USERS],
    );
    await db.query("SET session_replication_role = replica");
    // Filled in slices of 250,000 so that no statement holds too much at once.
    const slice = 250_000;
    for (let from = 0; from < baseEntries; from += slice) {
      const to = Math.min(baseEntries, from + slice);
      await db.query(FILL_ENTRIES_SQL, [to, USERS, from + 1]);
      say(`filled ${to} entries`);
    }
    await db.query(FILL_REFUNDS_SQL);
    await db.query(REFUNDED_MINOR_SQL);
    await db.query(FILL_TRANSITIONS_SQL);
    await db.query(FILL_WALLETS_SQL);
    await db.query("SET session_replication_role = origin");
    await db.query("VACUUM (ANALYZE)");
    await db.query("CHECKPOINT");
    const fillSeconds = (Date.now() - fillStarted) / 1000;
    const mix = await db.query<{ type: string; status: string; n: number }>(
      "SELECT type, status, count(*)::int AS n FROM ledger_entries GROUP BY 1, 2 ORDER BY 1, 2",
    );
    const totals = await db.query<{ entries: number; transitions: number; wallets: number }>(
      `SELECT (SELECT count(*) FROM ledger_entries)::int AS entries, (SELECT count(*) FROM ledger_transitions)::int AS transitions,
              (SELECT count(*) FROM wallets)::int AS wallets`,
    );
    say(`filled in ${fillSeconds.toFixed(0)} s: ${JSON.stringify(totals.rows[0])}`);

    // The migration, with its probes.
    const sampler = connect(1, "probe-locks");
    const readers = {
      wallets: { pool: connect(1, "probe-read-wallets"), sql: "SELECT balance_minor FROM wallets WHERE user_id = $1" },
      ledger_entries: {
        pool: connect(1, "probe-read-entries"),
        sql: "SELECT id, status FROM ledger_entries WHERE user_id = $1 ORDER BY created_at DESC LIMIT 10",
      },
      ledger_transitions: {
        pool: connect(1, "probe-read-transitions"),
        sql: "SELECT entry_id, to_status FROM ledger_transitions WHERE user_id = $1 LIMIT 10",
      },
    };
    const writers = {
      wallets: {
        pool: connect(1, "probe-write-wallets"),
        sql: "UPDATE wallets SET updated_at = updated_at WHERE user_id = $1",
      },
      ledger_entries: {
        pool: connect(1, "probe-write-entries"),
        sql: "UPDATE ledger_entries SET updated_at = updated_at WHERE user_id = $1 AND id = (SELECT min(id) FROM ledger_entries WHERE user_id = $1)",
      },
    };
    const walStart = (await admin.query<{ lsn: string }>("SELECT pg_current_wal_insert_lsn()::text AS lsn")).rows[0]!
      .lsn;
    let running = true;
    const t0 = performance.now();
    const at = () => performance.now() - t0;
    const logLines: { ms: number; line: string }[] = [];
    const migration = migrate(url.toString(), { log: (line) => logLines.push({ ms: at(), line }) }).finally(() => {
      running = false;
    });
    const locks = new Map<string, LockSeen>();
    const sampling = (async () => {
      while (running) {
        const rows = await sampler.query<{ relation: string; mode: string; granted: boolean }>(
          `SELECT COALESCE(l.relation::regclass::text, l.locktype || CASE WHEN l.locktype = 'advisory' THEN ' ' || l.objid ELSE '' END) AS relation,
                  l.mode, l.granted
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE a.datname = current_database() AND a.application_name NOT LIKE 'probe-%' AND a.application_name <> 'fill'
              AND l.pid <> pg_backend_pid() AND l.locktype IN ('relation', 'advisory')`,
        );
        const now = at();
        for (const row of rows.rows) {
          if (row.relation.startsWith("pg_")) continue;
          const key = `${row.relation} ${row.mode}`;
          const seen = locks.get(key);
          if (seen) seen.lastMs = now;
          else locks.set(key, { ...row, firstMs: now, lastMs: now });
        }
        await new Promise((done) => setTimeout(done, 100));
      }
    })();
    const reads = Object.entries(readers).map(async ([table, probe]) => {
      let worstMs = 0;
      let count = 0;
      while (running) {
        const started = at();
        await probe.pool.query(probe.sql, [`m${1 + (count % USERS)}`]);
        worstMs = Math.max(worstMs, at() - started);
        count++;
        await new Promise((done) => setTimeout(done, 100));
      }
      return { table, reads: count, worstMs };
    });
    const writes = Object.entries(writers).map(async ([table, probe]) => {
      await new Promise((done) => setTimeout(done, 1000));
      const started = at();
      if (!running) return { table, startedMs: started, waitedMs: 0, note: "the migration had ended" };
      await probe.pool.query(probe.sql, ["m77"]);
      return { table, startedMs: started, waitedMs: at() - started, note: "" };
    });
    const result = await migration;
    const migrationMs = at();
    await sampling;
    const readFigures = await Promise.all(reads);
    const writeFigures = await Promise.all(writes);
    const walEnd = (await admin.query<{ lsn: string }>("SELECT pg_current_wal_insert_lsn()::text AS lsn")).rows[0]!.lsn;
    const walBytes = Number(
      (
        await admin.query<{ b: string }>("SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS b", [
          walEnd,
          walStart,
        ])
      ).rows[0]!.b,
    );
    say(
      `migrated in ${(migrationMs / 1000).toFixed(1)} s: ${result.applied.join(", ")}; ${result.functionsApplied.length} function files`,
    );

    const postings = await db.query<{ event: string; account: string; n: number }>(
      "SELECT event, account, count(*)::int AS n FROM ledger_postings GROUP BY 1, 2 ORDER BY 1, 2",
    );
    const sizes = await db.query<{ relation: string; mb: string }>(
      `SELECT c.relname AS relation, round(pg_relation_size(c.oid) / 1048576.0, 1)::text AS mb
         FROM pg_class c WHERE c.relname LIKE 'ledger_postings%' AND c.relkind IN ('r', 'i') ORDER BY 1`,
    );

    // The books' checks and the balance check, as npm run audit runs them (no bank needed for these).
    process.env.DATABASE_URL = url.toString();
    const { runAudit } = await import("../lib/audit/run-audit");
    const books = await import("../lib/audit/checks/books");
    const { createBalanceCheck } = await import("../lib/audit/checks/balance-matches-ledger");
    const auditStarted = performance.now();
    const report = await runAudit({
      checks: [
        createBalanceCheck(),
        books.createBooksBalancedCheck(),
        books.createJournalMatchesEntriesCheck(),
        books.createWalletAccountsCheck(),
        // bank_clearing_matches_bank reads the bank's charges, refunds and disputes: this ledger has no bank.
      ],
    });
    const auditSeconds = (performance.now() - auditStarted) / 1000;
    const { closeDb } = await import("../lib/db");
    await closeDb();

    const figures = {
      entries: totals.rows[0],
      mix: mix.rows,
      fillSeconds,
      migrationSeconds: migrationMs / 1000,
      migrationLog: logLines,
      applied: result.applied,
      functionsApplied: result.functionsApplied.length,
      walBytes,
      postings: postings.rows,
      postingsTotal: postings.rows.reduce((sum, row) => sum + row.n, 0),
      sizesMiB: sizes.rows,
      locks: [...locks.values()].sort((a, b) => a.firstMs - b.firstMs),
      reads: readFigures,
      writes: writeFigures,
      audit: {
        ok: report.ok,
        seconds: auditSeconds,
        checks: report.checks.map((c) => ({
          name: c.name,
          ok: c.ok,
          violations: c.violations.length,
          first: c.violations.slice(0, 3),
        })),
      },
    };
    const lines = [
      `entries ${JSON.stringify(figures.entries)}, filled in ${fillSeconds.toFixed(0)} s`,
      `migration: ${figures.migrationSeconds.toFixed(1)} s wall (${figures.applied.join(", ")}, then ${figures.functionsApplied} function files); WAL ${(walBytes / 1048576).toFixed(0)} MiB`,
      ...logLines.map((line) => `  at ${(line.ms / 1000).toFixed(1)} s: ${line.line}`),
      `postings: ${figures.postingsTotal} (${postings.rows.map((row) => `${row.event}/${row.account} ${row.n}`).join(", ")})`,
      `sizes MiB: ${sizes.rows.map((row) => `${row.relation} ${row.mb}`).join(", ")}`,
      "locks held by the migrator on tables of the previous release (modes, first and last seen, s); indexes and the objects it creates (still uncommitted, so named by oid) left out:",
      ...lockSummary(figures.locks),
      ...readFigures.map((read) => `read ${read.table}: ${read.reads} reads, worst ${read.worstMs.toFixed(0)} ms`),
      ...writeFigures.map(
        (write) =>
          `write ${write.table}: started at ${(write.startedMs / 1000).toFixed(1)} s, waited ${(write.waitedMs / 1000).toFixed(1)} s ${write.note}`,
      ),
      `audit (${auditSeconds.toFixed(1)} s): ${report.ok ? "ok" : "FAILED"}; ${figures.audit.checks.map((c) => `${c.name} ${c.ok ? "ok" : `${c.violations} violations`}`).join(", ")}`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
    const stamp = new Date()
      .toISOString()
      .replace(/:/g, "-")
      .replace(/\.\d+Z$/, "Z");
    const dir = join(projectRoot, "bench", "results");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `migrate-large-${stamp}.json`);
    writeFileSync(file, `${JSON.stringify(figures, null, 2)}\n`);
    say(`wrote ${file}`);
    return report.ok ? 0 : 1;
  } finally {
    for (const pool of pools) await pool.end().catch(() => {});
    await admin.end().catch(() => {});
    await stack.stop();
  }
}

main()
  .catch((error: unknown) => {
    say(`migrate-large could not run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return 2;
  })
  .then(async (code) => {
    await runCleanups();
    process.exit(code);
  });
