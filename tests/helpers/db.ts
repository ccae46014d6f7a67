/**
 * Database helpers for integration and http tests. Tests share one migrated database and isolate by creating
 * their own users (random ids and emails); nothing is ever truncated, so tests can run in parallel and a
 * failed test leaves its rows for inspection.
 */
import { randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { assertLocalDatabase } from "../../scripts/lib/stack";
import { testStack } from "./stack";

let pool: pg.Pool | null = null;

/**
 * A `pg.Pool` to the test database (one per test worker, created on first use). Idle connections do not keep
 * the worker alive (`allowExitOnIdle`). Throws when there is no test stack or its database is not local.
 */
export function testPool(): pg.Pool {
  if (pool) return pool;
  const { databaseUrl } = testStack();
  assertLocalDatabase(databaseUrl);
  pool = new pg.Pool({
    connectionString: databaseUrl,
    // 10 connections per worker: with 2 workers on 2 cores this stays far below PostgreSQL's 100 while
    // leaving enough for tests that hold a transaction open while another session waits on it.
    max: 10,
    allowExitOnIdle: true,
    application_name: "wallet-tests",
  });
  // A dropped idle connection (server restart in a test) must not crash the worker.
  pool.on("error", () => {});
  return pool;
}

/** Closes the pool made by {@link testPool} (for an `afterAll`); safe when none was made. */
export async function closeTestPool(): Promise<void> {
  const current = pool;
  pool = null;
  await current?.end();
}

export interface TestUser {
  id: string;
  email: string;
}

/**
 * Inserts a row into "user" with a random id (`test_<uuid>`), a random email (`<id>@example.test`, the
 * reserved `.test` TLD) and `role` ("user" by default; "admin" for admin routes).
 *
 * Returns `{ id, email }`. Creates no wallet, session, password or token. Throws on any database error.
 */
export async function createTestUser(options: { role?: "user" | "admin"; name?: string } = {}): Promise<TestUser> {
  const id = `test_${randomUUID().replaceAll("-", "")}`;
  const email = `${id}@example.test`;
  await testPool().query(`INSERT INTO "user" ("id", "name", "email", "role") VALUES ($1, $2, $3, $4)`, [
    id,
    options.name ?? "Test User",
    email,
    options.role ?? "user",
  ]);
  return { id, email };
}

const scratchDatabases: string[] = [];

/** URL of database `name` on the test stack's PostgreSQL server. */
export function testDatabaseUrl(name: string): string {
  const url = new URL(testStack().databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs `work` on a connection to the test server's `postgres` database (for CREATE/DROP DATABASE). */
async function withAdminClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const url = testDatabaseUrl("postgres");
  assertLocalDatabase(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates an empty database `<prefix>_<12 random hex>` on the test server (no tables, no migrations) for a test
 * that needs a database of its own, and returns its URL. {@link dropScratchDatabases} drops every one made.
 */
export async function createScratchDatabase(prefix: string): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  await withAdminClient((client) => client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`));
  scratchDatabases.push(name);
  return testDatabaseUrl(name);
}

/** Drops (WITH FORCE: open sessions are closed) every database {@link createScratchDatabase} made here. */
export async function dropScratchDatabases(): Promise<void> {
  const names = scratchDatabases.splice(0);
  if (names.length === 0) return;
  await withAdminClient(async (client) => {
    for (const name of names)
      await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
  });
}
