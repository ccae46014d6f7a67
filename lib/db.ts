/**
 * The one database client module: a single `pg.Pool` per process, shared by Prisma (through
 * @prisma/adapter-pg) and by the ledger's raw SQL, so the hot path pays no ORM cost (docs/development.md notes 17 and
 * 24) and both see the same connection limits. Created lazily: importing this module during `next build` opens nothing.
 */
import { Pool, types, type PoolClient, type QueryConfig, type QueryResult, type QueryResultRow } from "pg";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "../generated/prisma/client";
import { env } from "./env";
import { log } from "./log";
import type { Queryable } from "./ledger/queryable";
import { withTransactionRetry } from "./ledger/retry";

// int8 (OID 20) values are parsed to JS numbers: every amount and balance in this schema is CHECKed below
// 2^53, so the conversion is exact, and a value that is not safe is refused loudly instead of rounded.
types.setTypeParser(20, (text: string) => {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new RangeError(`int8 value ${text} exceeds 2^53`);
  return value;
});

interface Clients {
  pool: Pool;
  prisma: PrismaClient;
}

const globalKey = Symbol.for("wallet.db.clients");
type GlobalWithClients = typeof globalThis & { [globalKey]?: Clients };

/**
 * True when the app sends named (server-side prepared) statements: DB_NAMED_STATEMENTS `on`, or `auto` without a
 * transaction pooler (docs/development.md note 27: behind PgBouncer in transaction pooling they fail with 42P05/26000).
 */
export function usesNamedStatements(): boolean {
  const { DB_NAMED_STATEMENTS, DB_POOLER } = env();
  return DB_NAMED_STATEMENTS === "on" || (DB_NAMED_STATEMENTS === "auto" && DB_POOLER !== "transaction");
}

/**
 * The session timeouts as `SET LOCAL` statements, for transactions behind a transaction pooler: PgBouncer refuses
 * startup `options` (08P01) and a plain `SET` would leak into another client's transactions, while `SET LOCAL`
 * ends with the transaction. Autocommit statements there get the role's settings (`ALTER ROLE ... SET`, which
 * `npm run cluster` applies; docs/scaling.md).
 */
function setLocalTimeoutsSql(): string {
  const { DB_STATEMENT_TIMEOUT_MS, DB_IDLE_IN_TRANSACTION_TIMEOUT_MS } = env();
  return `SET LOCAL statement_timeout = ${DB_STATEMENT_TIMEOUT_MS}; SET LOCAL idle_in_transaction_session_timeout = ${DB_IDLE_IN_TRANSACTION_TIMEOUT_MS}`;
}

function create(): Clients {
  const { DATABASE_URL, DB_POOL_MAX, DB_POOLER, DB_STATEMENT_TIMEOUT_MS, DB_IDLE_IN_TRANSACTION_TIMEOUT_MS } = env();
  if (!DATABASE_URL) {
    throw new Error("DATABASE_URL is not set: start the app with `npm run demo`, or set DATABASE_URL");
  }
  const pool = new Pool({
    connectionString: DATABASE_URL,
    max: DB_POOL_MAX,
    // A request waits at most 10 s for a free connection, then fails with a 500 instead of hanging.
    connectionTimeoutMillis: 10_000,
    // Idle connections are closed after 30 s so a quiet app does not pin server processes.
    idleTimeoutMillis: 30_000,
    // No statement may run for more than DB_STATEMENT_TIMEOUT_MS (a stuck lock surfaces as an error, not a hung
    // request); an idle-in-transaction session is killed after DB_IDLE_IN_TRANSACTION_TIMEOUT_MS so a crashed
    // handler cannot hold row locks. Behind a transaction pooler these go in SET LOCAL and role settings instead.
    // With named statements, every one of them (and every statement of the ledger's PL/pgSQL functions) runs its
    // generic plan, planned once per connection: the plans tests/integration/plan-stability.test.ts checks (case
    // C25). Left to choose, PostgreSQL re-plans a statement for each execution's values while those look cheaper,
    // and on the statistics of a young ledger such a plan read a top-up by its key through (type, created_at),
    // every top-up of every user (docs/benchmarks.md); re-planning also costs CPU on every call.
    options:
      DB_POOLER === "transaction"
        ? undefined
        : `-c statement_timeout=${DB_STATEMENT_TIMEOUT_MS} -c idle_in_transaction_session_timeout=${DB_IDLE_IN_TRANSACTION_TIMEOUT_MS}${usesNamedStatements() ? " -c plan_cache_mode=force_generic_plan" : ""}`,
    application_name: "wallet-app",
  });
  // An idle client's error (the server restarted, a failover closed the socket) must not crash the process; the
  // pool drops that client by itself. Logged, so a failover or a flapping network shows in the logs.
  pool.on("error", (error) => {
    const code = (error as { code?: unknown }).code;
    // Message and code only: pg hangs the whole client object off some of these errors.
    log().warn(
      { code: typeof code === "string" ? code : undefined, message: error.message },
      "idle database connection dropped",
    );
  });
  const prisma = new PrismaClient({
    adapter: new PrismaPg(pool),
    // Interactive transactions are not used on the money path; these bounds are explicit so that none can
    // wait forever for a connection or stay open past the server-side idle limit (docs/development.md note 17).
    transactionOptions: { maxWait: 10_000, timeout: 15_000 },
  });
  return { pool, prisma };
}

function clients(): Clients {
  const g = globalThis as GlobalWithClients;
  g[globalKey] ??= create();
  return g[globalKey];
}

/** The process's pg pool (created on first use). Throws when DATABASE_URL is unset. */
export function pool(): Pool {
  return clients().pool;
}

/** The process's Prisma client, running on {@link pool}. Throws when DATABASE_URL is unset. */
export function prisma(): PrismaClient {
  return clients().prisma;
}

/**
 * Runs `work` on one connection checked out of the pool, and always gives it back: destroyed instead of returned when
 * its socket failed or `work` called `markBroken` (with any thrown value).
 */
async function withCheckedOutClient<T>(
  work: (client: PoolClient, markBroken: (error: unknown) => void) => Promise<T>,
): Promise<T> {
  const client = await pool().connect();
  let broken: Error | undefined;
  const markBroken = (error: unknown) => {
    broken ??= error instanceof Error ? error : new Error(String(error));
  };
  // A checked-out client has no pool listener: its socket dying between two statements would emit an unhandled
  // 'error' and crash the process. The next statement fails on its own; this only keeps the event handled and
  // makes sure the dead connection is destroyed, not returned to the pool.
  client.on("error", markBroken);
  try {
    return await work(client, markBroken);
  } finally {
    client.off("error", markBroken);
    client.release(broken);
  }
}

/**
 * Runs `work` inside BEGIN ... COMMIT on one pooled connection at READ COMMITTED (the claim's isolation,
 * contract section 1); behind a transaction pooler the timeouts are set with SET LOCAL in the same round trip as
 * BEGIN. Rolls back and rethrows on any error; always releases the connection (a connection that failed, or whose
 * ROLLBACK failed, is destroyed instead of returned to the pool).
 */
export function withTransaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
  return withCheckedOutClient(async (client, markBroken) => {
    try {
      await client.query(
        env().DB_POOLER === "transaction"
          ? `BEGIN ISOLATION LEVEL READ COMMITTED; ${setLocalTimeoutsSql()}`
          : "BEGIN ISOLATION LEVEL READ COMMITTED",
      );
      const result = await work(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      await client.query("ROLLBACK").catch(markBroken);
      throw error;
    }
  });
}

/**
 * Runs `work` inside one read-only REPEATABLE READ transaction on one pooled connection: every statement of `work`
 * sees the same snapshot, so figures read by several statements (the books' trial balance: the house accounts' sums
 * and the wallets) agree with each other while movements commit. Rolls back at the end (nothing to commit); rethrows
 * any error; always releases the connection.
 */
export function withReadSnapshot<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
  return withCheckedOutClient(async (client, markBroken) => {
    try {
      await client.query(
        env().DB_POOLER === "transaction"
          ? `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; ${setLocalTimeoutsSql()}`
          : "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
      );
      return await work(client);
    } finally {
      await client.query("ROLLBACK").catch(markBroken);
    }
  });
}

/**
 * Runs `work` on one pooled connection in autocommit (no BEGIN), for a caller that must know whether its statement
 * was sent: a failure to get the connection (a saturated pool's connect timeout) throws before `work` runs. Always
 * releases the connection; one whose socket failed, or whose work threw, is destroyed instead of returned to the
 * pool (as pg's `pool.query` does).
 */
export function withConnection<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
  return withCheckedOutClient(async (client, markBroken) => {
    try {
      return await work(client);
    } catch (error) {
      markBroken(error);
      throw error;
    }
  });
}

/**
 * The pool as a {@link Queryable} whose single autocommit statements are retried after a lost connection (a
 * failover), where {@link pool} sends each statement once, as `withTransactionRetry` retries whole transactions, for at most DB_FAILOVER_RETRY_MS. Only for
 * statements that are safe to run again after they may have committed: every ledger statement is (a claim finds
 * its own row, transitions and stored responses are guarded by status, fencing token or `response IS NULL`).
 */
export function retryingPool(): Queryable {
  return retryingQueryable;
}

const retryingQueryable: Queryable = {
  query<R extends QueryResultRow>(config: QueryConfig | string, values?: unknown[]): Promise<QueryResult<R>> {
    return withTransactionRetry(() =>
      typeof config === "string" ? pool().query<R>(config, values) : pool().query<R>(config),
    );
  },
};

/** Closes the pool and Prisma (for CLIs and tests). Safe to call when nothing was opened. */
export async function closeDb(): Promise<void> {
  const g = globalThis as GlobalWithClients;
  const current = g[globalKey];
  if (!current) return;
  g[globalKey] = undefined;
  await current.prisma.$disconnect().catch(() => {});
  await current.pool.end().catch(() => {});
}
