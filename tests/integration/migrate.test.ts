/**
 * lib/migrate.ts against a real PostgreSQL (the test stack's server). Every test gets its own database
 * (CREATE DATABASE on the test server), so the shared, already migrated test database is never touched.
 */
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import {
  checkMigrations,
  DEFAULT_MIGRATIONS_DIR,
  EARLIER_CHECKSUMS,
  MIGRATION_LOCK_KEY,
  MigrationMismatchError,
  migrate,
  readMigrationFiles,
} from "../../lib/migrate";
import { createScratchDatabase, dropScratchDatabases, testDatabaseUrl } from "../helpers/db";
import { waitFor } from "../helpers/wait";

const scratchDirs: string[] = [];

/** A private copy of the project's migrations folder that a test may edit. */
function copyOfMigrations(): string {
  const dir = mkdtempSync(join(tmpdir(), "migrations-"));
  scratchDirs.push(dir);
  cpSync(DEFAULT_MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

/** Adds migration `name` holding `sql` to the migrations folder `dir`. */
function addMigration(dir: string, name: string, sql: string): void {
  mkdirSync(join(dir, name));
  writeFileSync(join(dir, name, "migration.sql"), sql);
}

async function query<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

afterAll(async () => {
  await dropScratchDatabases();
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
});

const allNames = readMigrationFiles().map((file) => file.name);

describe("migrate", () => {
  it("applies every migration once, and a second run applies nothing", async () => {
    const url = await createScratchDatabase("migrate_test");

    const first = await migrate(url);
    expect(first).toEqual({ applied: allNames, skipped: [] });

    const second = await migrate(url);
    expect(second).toEqual({ applied: [], skipped: allNames });

    const rows = await query<{ name: string; checksum: string }>(
      url,
      "SELECT name, checksum FROM _schema_migrations ORDER BY name",
    );
    expect(rows.map((row) => row.name)).toEqual(allNames);
    expect(rows.map((row) => row.checksum)).toEqual(readMigrationFiles().map((file) => file.checksum));
  });

  it("applies each migration exactly once when two runs start at the same moment", async () => {
    const url = await createScratchDatabase("migrate_test");
    // Staged, not hoped for: a third session holds the migration lock until both runs are seen waiting for
    // it in pg_stat_activity, then lets go, so the two really contend for the same lock.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock($1::bigint)", [MIGRATION_LOCK_KEY]);
      const runs = [migrate(url), migrate(url)];
      await waitUntil(async () => {
        const waiting = await holder.query<{ count: string }>(
          `SELECT count(*)::text AS count FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'wallet-migrate'
              AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
        );
        return waiting.rows[0]?.count === "2";
      });
      await holder.query("SELECT pg_advisory_unlock($1::bigint)", [MIGRATION_LOCK_KEY]);
      const results = await Promise.all(runs);

      const appliedByAll = results.flatMap((result) => result.applied).sort();
      expect(appliedByAll).toEqual([...allNames].sort());
      // The run that got the lock second found everything applied.
      expect(results.some((result) => result.applied.length === 0 && result.skipped.length === allNames.length)).toBe(
        true,
      );
    } finally {
      await holder.end();
    }
    const rows = await query<{ count: string }>(url, "SELECT count(*)::text AS count FROM _schema_migrations");
    expect(rows[0]?.count).toBe(String(allNames.length));
  });

  it("refuses to run when an applied migration's file changed, naming the file", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    await migrate(url, { migrationsDir: dir });

    const [firstFile] = readMigrationFiles(dir);
    appendFileSync(firstFile!.path, "\n-- an edit after the fact\n");
    // A new migration beside the edited one must not be applied either: nothing runs on a mismatch.
    const laterName = "29991231235959_should_not_apply";
    addMigration(dir, laterName, "CREATE TABLE should_not_exist (id int);\n");

    const error = await migrate(url, { migrationsDir: dir }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MigrationMismatchError);
    expect((error as Error).message).toContain(firstFile!.path);
    const tables = await query(url, "SELECT 1 FROM pg_tables WHERE tablename = 'should_not_exist'");
    expect(tables).toHaveLength(0);
  });

  it("refuses to run when an applied migration is missing on disk", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    await migrate(url, { migrationsDir: dir });
    await query(url, "INSERT INTO _schema_migrations (name, checksum) VALUES ($1, $2)", [
      "20000101000000_gone",
      "0".repeat(64),
    ]);

    const error = await migrate(url, { migrationsDir: dir }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MigrationMismatchError);
    expect((error as Error).message).toContain("20000101000000_gone");
  });

  it("rolls back a failing migration completely and records nothing for it", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    const badName = "29991231235959_broken";
    addMigration(dir, badName, "CREATE TABLE half_done (id int);\nSELECT no_such_function();\n");

    await expect(migrate(url, { migrationsDir: dir })).rejects.toThrow(/29991231235959_broken/);
    const tables = await query(url, "SELECT 1 FROM pg_tables WHERE tablename = 'half_done'");
    expect(tables).toHaveLength(0);
    const recorded = await query<{ name: string }>(url, "SELECT name FROM _schema_migrations ORDER BY name");
    expect(recorded.map((row) => row.name)).toEqual(allNames);
  });

  it("builds the claim index ledger_entries_user_id_type_ref_id_key, unique on (user_id, type, ref_id)", async () => {
    const url = await createScratchDatabase("migrate_test");
    await migrate(url);
    const rows = await query<{ indexdef: string }>(
      url,
      "SELECT indexdef FROM pg_indexes WHERE tablename = 'ledger_entries' AND indexname = 'ledger_entries_user_id_type_ref_id_key'",
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.indexdef).toMatch(/^CREATE UNIQUE INDEX .* \(user_id, type, ref_id\)$/);
  });
});

describe("checkMigrations (npm start's migration check)", () => {
  it("lists every migration as pending on an empty database, and creates nothing", async () => {
    const url = await createScratchDatabase("migrate_test");
    expect(await checkMigrations(url)).toEqual({ applied: [], pending: allNames, mismatches: [] });
    const tables = await query(url, "SELECT 1 FROM pg_tables WHERE tablename = '_schema_migrations'");
    expect(tables).toHaveLength(0);
  });

  it("lists only the migrations a database has not applied, in order", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    await migrate(url, { migrationsDir: dir });
    const later = ["29991231235958_later_one", "29991231235959_later_two"];
    for (const name of [...later].reverse()) addMigration(dir, name, "SELECT 1;\n");

    expect(await checkMigrations(url, { migrationsDir: dir })).toEqual({
      applied: allNames,
      pending: later,
      mismatches: [],
    });
    await migrate(url, { migrationsDir: dir });
    expect(await checkMigrations(url, { migrationsDir: dir })).toEqual({
      applied: [...allNames, ...later],
      pending: [],
      mismatches: [],
    });
  });

  it("reports an applied migration whose file changed, naming the file, and one missing from disk", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    await migrate(url, { migrationsDir: dir });
    const [firstFile] = readMigrationFiles(dir);
    appendFileSync(firstFile!.path, "\n-- an edit after the fact\n");
    await query(url, "INSERT INTO _schema_migrations (name, checksum) VALUES ($1, $2)", [
      "20000101000000_gone",
      "0".repeat(64),
    ]);

    const status = await checkMigrations(url, { migrationsDir: dir });
    expect(status.mismatches).toHaveLength(2);
    expect(status.mismatches.join("\n")).toContain(firstFile!.path);
    expect(status.mismatches.join("\n")).toContain("20000101000000_gone");
  });

  it("counts a migration recorded with an earlier checksum of a comment-only edit as applied; any other checksum is a mismatch", async () => {
    const [name, earlier] = Object.entries(EARLIER_CHECKSUMS)
      .flatMap(([migration, checksums]) => checksums.map((checksum) => [migration, checksum] as const))
      .at(0)!;
    const url = await createScratchDatabase("migrate_test");
    await migrate(url);
    await query(url, "UPDATE _schema_migrations SET checksum = $2 WHERE name = $1", [name, earlier]);

    expect(await checkMigrations(url)).toEqual({ applied: allNames, pending: [], mismatches: [] });
    expect(await migrate(url)).toEqual({ applied: [], skipped: allNames });

    // The negative control: a checksum not listed for that migration is still refused.
    await query(url, "UPDATE _schema_migrations SET checksum = $2 WHERE name = $1", [name, "f".repeat(64)]);
    expect((await checkMigrations(url)).mismatches).toHaveLength(1);
    await expect(migrate(url)).rejects.toBeInstanceOf(MigrationMismatchError);
  });

  it("rethrows a connection failure with pg's code", async () => {
    await expect(checkMigrations(testDatabaseUrl("no_such_database_for_check"))).rejects.toMatchObject({
      code: "3D000",
    });
  });
});

/** Polls `condition` every 20 ms for at most 10 s (the runs reach the lock within milliseconds). */
async function waitUntil(condition: () => Promise<boolean>): Promise<void> {
  await waitFor(condition, (ok) => ok, { what: "both migration runs to wait for the lock" });
}
