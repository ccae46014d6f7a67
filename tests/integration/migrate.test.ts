/**
 * lib/migrate.ts against a real PostgreSQL (the test stack's server): the numbered migrations, then the function
 * files (prisma/functions, docs/decisions/052). Every test gets its own database (CREATE DATABASE on the test
 * server), so the shared, already migrated test database is never touched.
 */
import {
  appendFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import {
  checkMigrations,
  DEFAULT_FUNCTIONS_DIR,
  DEFAULT_MIGRATIONS_DIR,
  EARLIER_CHECKSUMS,
  MIGRATION_LOCK_KEY,
  MigrationMismatchError,
  migrate,
  readFunctionFiles,
  readMigrationFiles,
} from "../../lib/migrate";
import { checkBeforeStart } from "../../scripts/lib/start-checks";
import { createScratchDatabase, dropScratchDatabases, testDatabaseUrl } from "../helpers/db";
import { waitFor } from "../helpers/wait";

const scratchDirs: string[] = [];

/**
 * A private copy of the project's migrations folder that a test may edit, with a copy of the function files in the
 * `functions` folder beside it (where migrate() looks for them when given only `migrationsDir`). Returns the
 * migrations folder.
 */
function copyOfMigrations(): string {
  const root = mkdtempSync(join(tmpdir(), "prisma-"));
  scratchDirs.push(root);
  cpSync(DEFAULT_MIGRATIONS_DIR, join(root, "migrations"), { recursive: true });
  cpSync(DEFAULT_FUNCTIONS_DIR, join(root, "functions"), { recursive: true });
  return join(root, "migrations");
}

/** The function files folder of a {@link copyOfMigrations} copy. */
function functionsOf(migrationsDir: string): string {
  return join(migrationsDir, "..", "functions");
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
const allFunctions = readFunctionFiles().map((file) => file.name);

describe("migrate", () => {
  it("applies every migration once, and a second run applies nothing", async () => {
    const url = await createScratchDatabase("migrate_test");

    const first = await migrate(url);
    expect(first).toEqual({ applied: allNames, skipped: [], functionsApplied: allFunctions, functionsSkipped: [] });

    const second = await migrate(url);
    expect(second).toEqual({ applied: [], skipped: allNames, functionsApplied: [], functionsSkipped: allFunctions });

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
      expect(results.flatMap((result) => result.functionsApplied).sort()).toEqual([...allFunctions].sort());
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
    // The function files run only after every migration did: none was applied or recorded.
    expect(await query(url, "SELECT 1 FROM pg_tables WHERE tablename = '_schema_functions'")).toHaveLength(0);
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
    expect(await checkMigrations(url)).toEqual({
      applied: [],
      pending: allNames,
      mismatches: [],
      functionsPending: allFunctions,
    });
    const tables = await query(
      url,
      "SELECT 1 FROM pg_tables WHERE tablename IN ('_schema_migrations', '_schema_functions')",
    );
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
      functionsPending: [],
    });
    await migrate(url, { migrationsDir: dir });
    expect(await checkMigrations(url, { migrationsDir: dir })).toEqual({
      applied: [...allNames, ...later],
      pending: [],
      mismatches: [],
      functionsPending: [],
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

    expect(await checkMigrations(url)).toEqual({
      applied: allNames,
      pending: [],
      mismatches: [],
      functionsPending: [],
    });
    expect(await migrate(url)).toMatchObject({ applied: [], skipped: allNames });

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

/** Replaces `from` with `to` in the function file `name`.sql of the function files folder `functionsDir`. */
function editFunctionFile(functionsDir: string, name: string, from: string, to: string): void {
  const path = join(functionsDir, `${name}.sql`);
  const text = readFileSync(path, "utf8");
  if (!text.includes(from)) throw new Error(`${path} no longer holds: ${from}`);
  writeFileSync(path, text.replace(from, to));
}

/** `pg_proc.prosrc` of the function `name` in the database at `url`. */
async function bodyOf(url: string, name: string): Promise<string> {
  const rows = await query<{ body: string }>(url, "SELECT prosrc AS body FROM pg_proc WHERE proname = $1", [name]);
  if (rows.length !== 1) throw new Error(`expected one function ${name}, found ${rows.length}`);
  return rows[0]!.body;
}

/** The `_schema_functions` rows, by name. */
async function functionRecords(url: string): Promise<Map<string, { checksum: string; appliedAt: string }>> {
  const rows = await query<{ name: string; checksum: string; applied_at: string }>(
    url,
    "SELECT name, checksum, applied_at::text FROM _schema_functions ORDER BY name",
  );
  return new Map(rows.map((row) => [row.name, { checksum: row.checksum, appliedAt: row.applied_at }]));
}

// A function whose body is easy to tell apart, and one that sorts before it (to show that a later failure takes
// back an earlier file of the same run).
const APPEND_ONLY = "ledger_append_only";
const APPEND_ONLY_MESSAGE = "'% is append-only', TG_TABLE_NAME";

describe("migrate: the function files (prisma/functions)", () => {
  it("records every function file with its checksum on the first run; a changed file is applied once and recorded, an unchanged one is not run again", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    await migrate(url, { migrationsDir: dir });
    const before = await functionRecords(url);
    expect([...before.keys()]).toEqual(allFunctions);
    for (const file of readFunctionFiles(functionsOf(dir))) expect(before.get(file.name)?.checksum).toBe(file.checksum);

    // A function changed in the database behind the migrator's back: an unchanged file must not run, or this is lost.
    const marker = "'changed behind the migrator, kept by a run that skips its file'";
    await query(
      url,
      readFileSync(join(functionsOf(dir), `${APPEND_ONLY}.sql`), "utf8").replace(APPEND_ONLY_MESSAGE, marker),
    );
    editFunctionFile(functionsOf(dir), "ledger_change_notify", "RETURN NULL;", "RETURN NULL; -- changed");
    const lines: string[] = [];
    const run = await migrate(url, { migrationsDir: dir, log: (line) => lines.push(line) });

    expect(run).toEqual({
      applied: [],
      skipped: allNames,
      functionsApplied: ["ledger_change_notify"],
      functionsSkipped: allFunctions.filter((name) => name !== "ledger_change_notify"),
    });
    expect(lines).toEqual(["applied function ledger_change_notify"]);
    expect(await bodyOf(url, "ledger_change_notify")).toContain("RETURN NULL; -- changed");
    expect(await bodyOf(url, APPEND_ONLY)).toContain(marker);
    const after = await functionRecords(url);
    const changed = readFunctionFiles(functionsOf(dir)).find((file) => file.name === "ledger_change_notify")!;
    expect(after.get("ledger_change_notify")?.checksum).toBe(changed.checksum);
    expect(after.get("ledger_change_notify")?.appliedAt).not.toBe(before.get("ledger_change_notify")?.appliedAt);
    for (const name of allFunctions.filter((n) => n !== "ledger_change_notify"))
      expect(after.get(name)).toEqual(before.get(name));

    expect(await migrate(url, { migrationsDir: dir })).toMatchObject({ functionsApplied: [] });
  });

  it("applies a changed function file exactly once when two runs start at the same moment", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    await migrate(url, { migrationsDir: dir });
    editFunctionFile(functionsOf(dir), APPEND_ONLY, APPEND_ONLY_MESSAGE, "'append-only, changed once'");
    // Staged as for the migrations: both runs are seen waiting for the lock before it is let go.
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query("SELECT pg_advisory_lock($1::bigint)", [MIGRATION_LOCK_KEY]);
      const runs = [migrate(url, { migrationsDir: dir }), migrate(url, { migrationsDir: dir })];
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
      expect(results.map((result) => result.functionsApplied).sort()).toEqual([[], [APPEND_ONLY]]);
    } finally {
      await holder.end();
    }
    expect(await bodyOf(url, APPEND_ONLY)).toContain("'append-only, changed once'");
    expect((await functionRecords(url)).size).toBe(allFunctions.length);
  });

  it("rolls back every function file of a run when one fails, records nothing, and names the file; a signature change goes through a numbered migration that drops the old function", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    await migrate(url, { migrationsDir: dir });
    const before = await functionRecords(url);
    const admitBefore = await bodyOf(url, "ledger_admit_topup");
    // ledger_admit_topup sorts first and is fine; ledger_pending_credits_minor changes its result type, which
    // CREATE OR REPLACE cannot do (42P13): the whole run must be taken back.
    editFunctionFile(
      functionsOf(dir),
      "ledger_admit_topup",
      "RETURN QUERY SELECT e.*",
      "RETURN QUERY SELECT e.* /* new */",
    );
    editFunctionFile(functionsOf(dir), "ledger_pending_credits_minor", "RETURNS bigint", "RETURNS numeric");

    const error = await migrate(url, { migrationsDir: dir }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(join(functionsOf(dir), "ledger_pending_credits_minor.sql"));
    expect((error as Error).message).toMatch(/cannot change return type/);
    expect(await bodyOf(url, "ledger_admit_topup")).toBe(admitBefore);
    expect(await functionRecords(url)).toEqual(before);
    expect((await checkMigrations(url, { migrationsDir: dir })).functionsPending).toEqual([
      "ledger_admit_topup",
      "ledger_pending_credits_minor",
    ]);

    // The way to change a signature (docs/development.md, "How to change a database function"): a numbered
    // migration drops the old function, and the file creates the new one in the same run.
    addMigration(
      dir,
      "29991231235959_drop_pending_credits",
      "DROP FUNCTION ledger_pending_credits_minor(text, bigint);\n",
    );
    const run = await migrate(url, { migrationsDir: dir });
    expect(run).toMatchObject({
      applied: ["29991231235959_drop_pending_credits"],
      functionsApplied: ["ledger_admit_topup", "ledger_pending_credits_minor"],
    });
    const result = await query<{ result: string }>(
      url,
      "SELECT pg_get_function_result('ledger_pending_credits_minor'::regproc) AS result",
    );
    expect(result[0]?.result).toBe("numeric");
  });

  it("applies again a file whose function is missing, and forgets the record of a file that is gone", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    await migrate(url, { migrationsDir: dir });
    await query(url, "DROP FUNCTION live_watchers_register(text[], integer)");
    unlinkSync(join(functionsOf(dir), `${APPEND_ONLY}.sql`));
    expect((await checkMigrations(url, { migrationsDir: dir })).functionsPending).toEqual(["live_watchers_register"]);

    const lines: string[] = [];
    const run = await migrate(url, { migrationsDir: dir, log: (line) => lines.push(line) });
    expect(run.functionsApplied).toEqual(["live_watchers_register"]);
    expect(lines).toEqual([
      `forgot function ${APPEND_ONLY}: its file is gone`,
      "applied function live_watchers_register",
    ]);
    expect([...(await functionRecords(url)).keys()]).toEqual(allFunctions.filter((name) => name !== APPEND_ONLY));
    expect(await query(url, "SELECT 1 FROM pg_proc WHERE proname = 'live_watchers_register'")).toHaveLength(1);
  });

  it("on a database of the release before function files (no records), applies every file once and then none", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    const empty = mkdtempSync(join(tmpdir(), "no-functions-"));
    scratchDirs.push(empty);
    // The previous release: every numbered migration, which define the functions, and no _schema_functions.
    await migrate(url, { migrationsDir: dir, functionsDir: empty });
    await query(url, "DROP TABLE _schema_functions");
    expect((await checkMigrations(url, { migrationsDir: dir })).functionsPending).toEqual(allFunctions);

    expect(await migrate(url, { migrationsDir: dir })).toMatchObject({ applied: [], functionsApplied: allFunctions });
    expect(await checkMigrations(url, { migrationsDir: dir })).toMatchObject({ pending: [], functionsPending: [] });
    expect(await migrate(url, { migrationsDir: dir })).toMatchObject({
      functionsApplied: [],
      functionsSkipped: allFunctions,
    });
  });

  it("with migrationsDir alone, reads the functions folder beside it, and none when there is none (an older checkout)", async () => {
    const url = await createScratchDatabase("migrate_test");
    const root = mkdtempSync(join(tmpdir(), "older-checkout-"));
    scratchDirs.push(root);
    cpSync(DEFAULT_MIGRATIONS_DIR, join(root, "migrations"), { recursive: true });
    const run = await migrate(url, { migrationsDir: join(root, "migrations") });
    expect(run).toEqual({ applied: allNames, skipped: [], functionsApplied: [], functionsSkipped: [] });
  });

  it("a migration that adds a trigger on a new function creates a placeholder only when it is missing, and the function file replaces it in the same run", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    writeFileSync(
      join(functionsOf(dir), "c52_stamp.sql"),
      "CREATE OR REPLACE FUNCTION c52_stamp() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n  NEW.stamped := true;\n  RETURN NEW;\nEND\n$$;\n",
    );
    // The recipe of docs/decisions/052: the placeholder raises, holds no rule, and is never written over the file's.
    addMigration(
      dir,
      "29991231235959_stamped",
      `CREATE TABLE c52_stamped (id int PRIMARY KEY, stamped boolean NOT NULL DEFAULT false);
DO $$
BEGIN
  IF to_regprocedure('c52_stamp()') IS NULL THEN
    CREATE FUNCTION c52_stamp() RETURNS trigger LANGUAGE plpgsql
      AS $f$ BEGIN RAISE EXCEPTION 'c52_stamp is a placeholder for prisma/functions/c52_stamp.sql'; END $f$;
  END IF;
END
$$;
CREATE TRIGGER c52_stamped_stamp BEFORE INSERT ON c52_stamped FOR EACH ROW EXECUTE FUNCTION c52_stamp();
`,
    );
    const run = await migrate(url, { migrationsDir: dir });
    expect(run.functionsApplied).toEqual(["c52_stamp", ...allFunctions]);
    await query(url, "INSERT INTO c52_stamped (id) VALUES (1)");
    expect(await query(url, "SELECT stamped FROM c52_stamped")).toEqual([{ stamped: true }]);
  });

  it("refuses a functions folder with an entry that is not a function file, naming it", () => {
    const cases: [string, string, RegExp][] = [
      ["README.md", "# notes\n", /README\.md is not a function file/],
      ["Upper_Case.sql", "", /Upper_Case\.sql is not a function file/],
      [
        "plain_create.sql",
        "CREATE FUNCTION plain_create() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n",
        /CREATE OR REPLACE FUNCTION plain_create\(/,
      ],
      [
        "named_after.sql",
        "CREATE OR REPLACE FUNCTION another_one() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n",
        /named_after\.sql must define/,
      ],
      [
        "two_in_one.sql",
        "CREATE OR REPLACE FUNCTION two_in_one() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\nCREATE OR REPLACE FUNCTION second() RETURNS int LANGUAGE sql AS $$ SELECT 2 $$;\n",
        /two_in_one\.sql must define exactly one function/,
      ],
    ];
    for (const [name, text, expected] of cases) {
      const dir = mkdtempSync(join(tmpdir(), "functions-"));
      scratchDirs.push(dir);
      writeFileSync(join(dir, name), text);
      expect(() => readFunctionFiles(dir), name).toThrow(expected);
    }
    // The control: a comment that names another definition is not one.
    const dir = mkdtempSync(join(tmpdir(), "functions-"));
    scratchDirs.push(dir);
    writeFileSync(
      join(dir, "fine.sql"),
      "-- Replaces nothing: CREATE FUNCTION x() would be wrong here.\nCREATE OR REPLACE FUNCTION fine() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n",
    );
    expect(readFunctionFiles(dir).map((file) => file.name)).toEqual(["fine"]);
  });
});

describe("checkMigrations: the function files", () => {
  it("reports a changed function file as not applied until migrate applies it", async () => {
    const url = await createScratchDatabase("migrate_test");
    const dir = copyOfMigrations();
    await migrate(url, { migrationsDir: dir });
    expect((await checkMigrations(url, { migrationsDir: dir })).functionsPending).toEqual([]);
    editFunctionFile(functionsOf(dir), APPEND_ONLY, APPEND_ONLY_MESSAGE, "'append-only, not yet applied'");

    expect(await checkMigrations(url, { migrationsDir: dir })).toEqual({
      applied: allNames,
      pending: [],
      mismatches: [],
      functionsPending: [APPEND_ONLY],
    });
    // Only read: the check applied nothing.
    expect(await bodyOf(url, APPEND_ONLY)).toContain(APPEND_ONLY_MESSAGE);
    await migrate(url, { migrationsDir: dir });
    expect((await checkMigrations(url, { migrationsDir: dir })).functionsPending).toEqual([]);
  });

  it("npm start's checks refuse a database with a function file not applied, naming it", async () => {
    const url = await createScratchDatabase("migrate_test");
    await migrate(url);
    // The project's own files (npm start reads no other folder): a function dropped is a file not applied as it is.
    await query(url, "DROP FUNCTION live_watchers_register(text[], integer)");
    const root = mkdtempSync(join(tmpdir(), "start-root-"));
    scratchDirs.push(root);
    const saved = process.env.DATABASE_URL;
    process.env.DATABASE_URL = url;
    try {
      const { problems } = await checkBeforeStart({ migrate: false, root, log: () => {} });
      const database = problems.filter((problem) => problem.startsWith("database "));
      expect(database).toEqual([
        expect.stringMatching(
          /1 function file\(s\) of prisma\/functions not applied as they now are: live_watchers_register /,
        ),
      ]);
    } finally {
      process.env.DATABASE_URL = saved;
    }
  });
});

/** Polls `condition` every 20 ms for at most 10 s (the runs reach the lock within milliseconds). */
async function waitUntil(condition: () => Promise<boolean>): Promise<void> {
  await waitFor(condition, (ok) => ok, { what: "both migration runs to wait for the lock" });
}
