/**
 * Claim + credit in-process through lib/ledger versus the same SQL run by pgbench against the same database, at
 * several concurrencies. The pgbench script is not written by hand: one transaction
 * is run through lib/ledger with a recording connection, and the statements it sent (text and parameters) become the
 * script, so both sides run byte-identical SQL; only what must differ per transaction (the user, the ref id, the
 * claimed row's id) becomes a pgbench variable.
 */
import { spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Pool, PoolClient, QueryResult, QueryResultRow, QueryConfig } from "pg";
import { pool } from "../lib/db";
import {
  decideRewardUnderWalletLock,
  jsonStoredResponse,
  operationKey,
  succeededRewardResponse,
  withTransactionRetry,
  type Queryable,
} from "../lib/ledger";
import { percentile } from "./stats";

/** Where Debian's `postgresql-15` package puts pgbench (docs/development.md note 23). */
export const PGBENCH_PATH = "/usr/lib/postgresql/15/bin/pgbench";
/** The apt package that provides it, named when it is missing. */
export const PGBENCH_PACKAGE = "postgresql-15";

/** Returns pgbench's path, or null when it is not installed (install the apt package {@link PGBENCH_PACKAGE}). */
export function findPgbench(): string | null {
  try {
    accessSync(PGBENCH_PATH, constants.X_OK);
    return PGBENCH_PATH;
  } catch {
    return null;
  }
}

/**
 * Amount credited per transaction, minor units. Any valid amount works; 100 keeps 10,000 users' balances far
 * below the 2^53 CHECK however long the benchmark runs.
 */
const CREDIT_AMOUNT_MINOR = 100;
const CURRENCY = "USD";

/** One statement as the database received it. */
interface CapturedStatement {
  readonly text: string;
  readonly values: readonly unknown[];
}

/** A {@link Queryable} that records every statement before passing it on. */
class RecordingConnection implements Queryable {
  readonly statements: CapturedStatement[] = [];
  constructor(private readonly inner: PoolClient) {}
  query<R extends QueryResultRow = Record<string, unknown>>(config: QueryConfig): Promise<QueryResult<R>>;
  query<R extends QueryResultRow = Record<string, unknown>>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
  query<R extends QueryResultRow = Record<string, unknown>>(
    textOrConfig: string | QueryConfig,
    values?: unknown[],
  ): Promise<QueryResult<R>> {
    const config: QueryConfig =
      typeof textOrConfig === "string" ? { text: textOrConfig, values: values ?? [] } : textOrConfig;
    this.statements.push({ text: config.text, values: config.values ?? [] });
    return this.inner.query<R>(config);
  }
}

/** The reward day every bench credit counts against (any `YYYY-MM-DD`: the cap below is never reached). */
const CREDIT_DAY = "2026-12-01";
/** A day's cap and a wallet ceiling no run reaches: every credit does the cap row's and the room's work, none refused. */
const UNREACHED_MINOR = 2 ** 52;

/**
 * One claim + credit through lib/ledger, as a credit without an external call runs (lib/rewards/credit-reward.ts
 * without the Redis reservation): one autocommit statement, `decideRewardUnderWalletLock`, which locks the wallet,
 * sums the user's unfinished top-ups, claims the row terminal, counts the day's cap row, credits the wallet and stores
 * the first response (docs/decisions/047); retried on 40001/40P01. Returns the statements sent when `record` is set
 * (one), and the row's id.
 */
export async function creditOnce(
  userId: string,
  refId: string,
  record = false,
): Promise<{ statements: CapturedStatement[]; entryId: number }> {
  const client = record ? await pool().connect() : null;
  const recorder = client ? new RecordingConnection(client) : null;
  try {
    const key = operationKey(userId, "reward", refId);
    const params = { adId: refId, day: CREDIT_DAY, amount: CREDIT_AMOUNT_MINOR, currency: CURRENCY };
    const decided = await withTransactionRetry(() =>
      decideRewardUnderWalletLock(recorder ?? pool(), {
        key,
        amountMinor: CREDIT_AMOUNT_MINOR,
        currency: CURRENCY,
        params,
        day: CREDIT_DAY,
        capMinor: UNREACHED_MINOR,
        maxBalanceMinor: UNREACHED_MINOR,
        succeeded: succeededRewardResponse(params, CREDIT_AMOUNT_MINOR, CURRENCY),
        refusal: jsonStoredResponse(422, { code: "balance_limit_exceeded" }),
      }),
    );
    if (decided.kind !== "decided" || decided.entry.status !== "succeeded")
      throw new Error(`bench: fresh key ${refId} was not credited (${decided.kind})`);
    return { statements: recorder?.statements ?? [], entryId: decided.entry.id };
  } finally {
    client?.release();
  }
}

/** A pgbench script and the `-D` definitions of its constants. */
export interface PgbenchScript {
  readonly text: string;
  readonly defines: readonly string[];
}

/**
 * Turns the statements of one recorded transaction into a pgbench script: `$n` placeholders become `:variables`
 * (sent as parameters in `-M extended`, as node-pg sends them); the user id and ref id become `\set` random draws,
 * the claimed row's id comes back from the claim with `\gset`, NULL parameters are written as NULL, and every other
 * parameter is a constant passed with `-D`. Throws when a statement contains a character pgbench would misread.
 */
export function pgbenchScript(
  recorded: { statements: readonly CapturedStatement[]; entryId: number },
  sample: { userId: string; refId: string },
  users: number | "hot",
): PgbenchScript {
  const defines: string[] = [];
  const lines: string[] = [
    users === "hot" ? `\\set uid 1` : `\\set uid random(1, ${users})`,
    // Ref ids are drawn from 10^15 values: a repeat within a run of a few hundred thousand transactions has a
    // probability far below one in a thousand, and a repeat would only make that transaction a no-op claim.
    `\\set ref random(1, 1000000000000000)`,
  ];
  // One statement runs in autocommit, as lib/ledger sends it; several run in one transaction.
  const transaction = recorded.statements.length > 1;
  if (transaction) lines.push("BEGIN ISOLATION LEVEL READ COMMITTED;");
  recorded.statements.forEach((statement, index) => {
    if (statement.text.includes(";")) throw new Error("bench: a recorded statement contains ';'");
    const text = statement.text.trim().replace(/\$(\d+)/g, (_match, digits: string) => {
      const value = statement.values[Number(digits) - 1];
      if (value === null || value === undefined) return "NULL";
      if (value === sample.userId) return ":uid";
      if (value === sample.refId) return ":ref";
      if (index > 0 && value === recorded.entryId) return ":c_id";
      const name = `s${index}p${digits}`;
      defines.push(`${name}=${pgText(value)}`);
      return `:${name}`;
    });
    // The claim returns the new row; its columns become c_<column> variables for the next statements.
    lines.push(index === 0 ? `${text} \\gset c_` : `${text};`);
  });
  if (transaction) lines.push("COMMIT;");
  return { text: `${lines.join("\n")}\n`, defines };
}

/**
 * The text form node-pg sends for a parameter value. An array is a PostgreSQL array literal with every element quoted
 * (a response template's segments hold quotes and commas).
 */
function pgText(value: unknown): string {
  if (Array.isArray(value))
    return `{${value.map((item) => `"${String(item).replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`;
  if (typeof value === "boolean") return value ? "true" : "false";
  if (value instanceof Date) return value.toISOString();
  return String(value);
}

/** Throughput and latency of one measurement. */
export interface TxFigures {
  readonly transactions: number;
  readonly txPerS: number;
  readonly latencyAvgMs: number;
  readonly latencyP50Ms: number | null;
  readonly latencyP99Ms: number | null;
}

/**
 * Runs pgbench with `script` against `databaseUrl`: `concurrency` connections, `threads` threads, for `durationS`
 * seconds, extended protocol. Returns tps (without connection time) and average latency. Throws with pgbench's
 * output when it fails or reports failed transactions.
 */
export async function runPgbench(options: {
  pgbench: string;
  databaseUrl: string;
  script: PgbenchScript;
  concurrency: number;
  durationS: number;
  /**
   * pgbench's query protocol: "extended" (default; unnamed statements, parsed and planned on every execution, as
   * node-pg sends them) or "prepared" (named statements, planned once per connection).
   */
  protocol?: "extended" | "prepared";
}): Promise<TxFigures> {
  const dir = mkdtempSync(join(tmpdir(), "bench-pgbench-"));
  try {
    const file = join(dir, "claim-credit.sql");
    writeFileSync(file, options.script.text);
    // pgbench's client threads: two on this 2-core machine (one per core) once there are two clients; its C client
    // costs a few microseconds per transaction, so more threads would only compete with PostgreSQL for the cores.
    const threads = Math.min(options.concurrency, 2);
    const args = [
      "-n",
      "-M",
      options.protocol ?? "extended",
      "-c",
      String(options.concurrency),
      "-j",
      String(threads),
      "-T",
      String(options.durationS),
      "-f",
      file,
      ...options.script.defines.flatMap((define) => ["-D", define]),
      options.databaseUrl,
    ];
    const { code, output } = await runCommand(options.pgbench, args);
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(output);
    const latency = /latency average = ([\d.]+) ms/.exec(output);
    const processed = /number of transactions actually processed: (\d+)/.exec(output);
    const failed = /number of failed transactions: (\d+)/.exec(output);
    if (code !== 0 || !tps || !latency || !processed || (failed && Number(failed[1]) > 0)) {
      throw new Error(`pgbench failed (exit ${code}):\n${output.slice(-3000)}`);
    }
    return {
      transactions: Number(processed[1]),
      txPerS: Number(tps[1]),
      latencyAvgMs: Number(latency[1]),
      latencyP50Ms: null,
      latencyP99Ms: null,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runCommand(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.on("error", (error) => resolve({ code: null, output: error.message }));
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** Ref ids of the in-process loops: one counter for the whole process, so no two calls reuse a key. */
let refSequence = 0;

/**
 * Runs {@link creditOnce} in `concurrency` concurrent loops on lib/db's pool for `durationS` seconds; each loop
 * picks a random user of `users` (or user "1" for the hot-row variant) and a fresh ref id. Returns throughput and
 * latency (average, p50, p99 of whole transactions, measured around each call).
 */
export async function runInProcess(options: {
  concurrency: number;
  durationS: number;
  users: number | "hot";
}): Promise<TxFigures> {
  const latencies: number[] = [];
  const startedMs = performance.now();
  const deadlineMs = startedMs + options.durationS * 1000;
  // The first error stops every loop (so none is still using the pool when the caller cleans up) and is rethrown.
  let failure: { error: unknown } | null = null;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (performance.now() < deadlineMs && failure === null) {
        const userId = options.users === "hot" ? "1" : String(1 + Math.floor(Math.random() * options.users));
        // Unique within the run (the counter is module-wide, shared by every call), and apart from pgbench's
        // digit-only ref ids by the "n".
        const refId = `n${refSequence++}`;
        const t0 = performance.now();
        try {
          await creditOnce(userId, refId);
        } catch (error) {
          failure ??= { error };
          break;
        }
        latencies.push(performance.now() - t0);
      }
    }),
  );
  if (failure !== null) throw (failure as { error: unknown }).error;
  const elapsedS = (performance.now() - startedMs) / 1000;
  const total = latencies.reduce((sum, value) => sum + value, 0);
  return {
    transactions: latencies.length,
    txPerS: latencies.length / elapsedS,
    latencyAvgMs: total / Math.max(1, latencies.length),
    latencyP50Ms: percentile(latencies, 50),
    latencyP99Ms: percentile(latencies, 99),
  };
}

/** What one statement of the credit transaction costs PostgreSQL, from EXPLAIN ANALYZE and the WAL position. */
export interface StatementCost {
  /** The statement's name in {@link STATEMENT_NAMES}. */
  readonly statement: string;
  /** EXPLAIN ANALYZE's "Planning Time": node-pg sends unnamed statements, so every execution is planned again. */
  readonly planningMs: number;
  /** EXPLAIN ANALYZE's "Execution Time": the whole statement, its CTEs included. */
  readonly executionMs: number;
  /** WAL written by the statement: the session's insert position before and after (nothing else runs meanwhile). */
  readonly walBytes: number;
  /** The plan, indented, with actual times and rows per node. */
  readonly plan: string;
}

/** The recorded credit's statements: one since docs/decisions/047 (claim, credit and response together). */
const STATEMENT_NAMES = ["claim, credit and response (ledger_decide_reward)"];

/** A JSON plan as indented text: node type, relation or index, actual time and rows (like EXPLAIN's text form). */
function renderPlan(node: Record<string, unknown>, depth = 0): string {
  const target = node["Index Name"]
    ? ` using ${String(node["Index Name"])}`
    : node["Relation Name"]
      ? ` on ${String(node["Relation Name"])}`
      : "";
  const cte = node["CTE Name"] ? ` ${String(node["CTE Name"])}` : "";
  const line = `${"  ".repeat(depth)}${String(node["Node Type"])}${cte}${target} (actual time=${String(node["Actual Startup Time"])}..${String(node["Actual Total Time"])} rows=${String(node["Actual Rows"])})`;
  const children = (node.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [line, ...children.map((child) => renderPlan(child, depth + 1))].join("\n");
}

/**
 * Runs the recorded credit transaction once more with EXPLAIN ANALYZE on each statement, for a fresh key of
 * `userId`, inside one transaction that is committed like the real one. Returns each statement's execution time,
 * WAL bytes and plan: where PostgreSQL's time per transaction goes. Run it while nothing else writes.
 */
export async function explainCredit(
  db: Pool,
  recorded: { statements: readonly CapturedStatement[]; entryId: number },
  sample: { userId: string; refId: string },
  userId: string,
): Promise<StatementCost[]> {
  const refId = `explain-${Date.now()}`;
  const client = await db.connect();
  const costs: StatementCost[] = [];
  try {
    await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
    let entryId = 0;
    for (const [index, statement] of recorded.statements.entries()) {
      const values = statement.values.map((value) => {
        if (value === sample.userId) return userId;
        if (value === sample.refId) return refId;
        if (index > 0 && value === recorded.entryId) return entryId;
        return value;
      });
      const before = await client.query<{ lsn: string }>("SELECT pg_current_wal_insert_lsn()::text AS lsn");
      const result = await client.query<{ "QUERY PLAN": unknown }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`,
        values,
      );
      const wal = await client.query<{ bytes: string }>(
        "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::text AS bytes",
        [before.rows[0]!.lsn],
      );
      const root = (result.rows[0]!["QUERY PLAN"] as Record<string, unknown>[])[0]!;
      costs.push({
        statement: STATEMENT_NAMES[index] ?? `statement ${index + 1}`,
        planningMs: Number(root["Planning Time"] ?? 0),
        executionMs: Number(root["Execution Time"] ?? 0),
        walBytes: Number(wal.rows[0]!.bytes),
        plan: renderPlan(root.Plan as Record<string, unknown>),
      });
      if (index === 0) {
        const claimed = await client.query<{ id: number }>(
          "SELECT id FROM ledger_entries WHERE user_id = $1 AND type = 'reward' AND ref_id = $2",
          [userId, refId],
        );
        entryId = claimed.rows[0]!.id;
      }
    }
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
  return costs;
}
