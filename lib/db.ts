/**
 * The one database client module: a single `pg.Pool` per process, shared by Prisma (through
 * @prisma/adapter-pg) and by the ledger's raw SQL, so the hot path pays no ORM cost (stack-notes 17 and 24)
 * and both see the same connection limits. Created lazily: importing this module during `next build`
 * opens nothing.
 */
import { Pool, types, type PoolClient } from "pg";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "../generated/prisma/client";
import { env } from "./env";

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

function create(): Clients {
  const { DATABASE_URL, DB_POOL_MAX } = env();
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
    // No statement may run for more than 15 s (a stuck lock surfaces as an error, not a hung request);
    // an idle-in-transaction session is killed after 10 s so a crashed handler cannot hold row locks.
    options: "-c statement_timeout=15000 -c idle_in_transaction_session_timeout=10000",
    application_name: "wallet-app",
  });
  // An idle client's error (e.g. the server restarted) must not crash the process; the pool drops it.
  pool.on("error", () => {});
  const prisma = new PrismaClient({
    adapter: new PrismaPg(pool),
    // Interactive transactions are not used on the money path; these bounds are explicit so that none can
    // wait forever for a connection or stay open past the server-side idle limit (stack-notes 17).
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
 * Runs `work` inside BEGIN ... COMMIT on one pooled connection at READ COMMITTED (the claim's isolation,
 * contract section 1). Rolls back and rethrows on any error; always releases the connection.
 */
export async function withTransaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool().connect();
  try {
    await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Closes the pool and Prisma (for CLIs and tests). Safe to call when nothing was opened. */
export async function closeDb(): Promise<void> {
  const g = globalThis as GlobalWithClients;
  const current = g[globalKey];
  if (!current) return;
  g[globalKey] = undefined;
  await current.prisma.$disconnect().catch(() => {});
  await current.pool.end().catch(() => {});
}
