/**
 * The schema migration runner. Prisma's migrate engine cannot run on these machines (docs/development.md note 1), so
 * migrations are plain SQL files in Prisma's folder layout, `prisma/migrations/<timestamp>_<name>/migration.sql`,
 * applied here with the plain `pg` driver:
 *
 * - in name order (the 14-digit timestamp prefix sorts chronologically), each file in its own transaction
 *   together with its row in `_schema_migrations`, so a file is either fully applied and recorded or not at all;
 * - under a session-level advisory lock ({@link MIGRATION_LOCK_KEY}), so two runs started at once (two app
 *   instances, a CLI and a test) apply each file once: the second waits, then finds nothing to do;
 * - refusing to run when the record and the files disagree: a recorded file whose SHA-256 changed (someone
 *   edited an applied migration: write a new one instead) or a recorded migration whose file is gone. The one
 *   exception is a comment-only edit listed in {@link EARLIER_CHECKSUMS}.
 *
 * Then, under the same lock, the function files (Flyway's "repeatable migrations"): `prisma/functions/<name>.sql`,
 * one per database function, each its one current definition as `CREATE OR REPLACE FUNCTION` (docs/development.md
 * note 1, docs/decisions/052). A file is applied when its SHA-256 differs from the one recorded in `_schema_functions`,
 * when it has no record, or when its function is missing from the schema; every such file in name order, all in one
 * transaction with their records, so either all of them are applied and recorded or none. They run after the
 * numbered migrations because they need the tables those create; a LANGUAGE sql function's body is checked when it
 * is created, so one that calls another function of these files must sort after it.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import pg from "pg";

/**
 * Key of the advisory lock held while migrating: the ASCII bytes of "wallet" read as one integer
 * (0x77616c6c6574 = 131260314576244). Fixed so every run of every version of this project takes the same
 * lock; advisory locks are per database, so separate databases on one server never wait for each other.
 */
export const MIGRATION_LOCK_KEY = "131260314576244";

/**
 * Checksums (SHA-256 of the file's bytes) that applied migrations had before a comment-only edit, by migration
 * name. A database that recorded one of them has applied exactly the statements the current file holds, so the
 * migration counts as applied, not as changed; its record keeps the old checksum. Each entry is proved by
 * tests/unit/migration-checksums.test.ts: git history holds a version of the file with that checksum whose lines,
 * `--` comment lines aside, equal the current file's. Any other change to an applied migration goes in a new one
 * (docs/development.md note 1).
 */
export const EARLIER_CHECKSUMS: Readonly<Record<string, readonly string[]>> = {
  // Comments that cited planning notes outside the repository now cite docs/ (no statement changed).
  "20261129000000_init": ["90b74a57eb8d7b6e08bab4f28739173f04c1c8b2601aa46b7c2a011c3cda7050"],
  "20261130110000_reward_cap_days": ["d26bf5a3de704f7fca7621c54bf01dd36ed52f47cbe900608813b1a9d54993b9"],
  "20261130120000_webhook_event_detail": ["fc427c86121e9996ef8aacdb7355826b4351ac470c5f5ca1d48c94ebd4f3b3de"],
  "20261130130000_settle_failures": ["b6a1a9adda24eefa2d51a08ee3ac1f2138451847476c72b69f58ea92b5e4bd15"],
};

/** The folder name rule: 14-digit UTC timestamp, underscore, lower-case name (Prisma's layout). */
const MIGRATION_NAME_PATTERN = /^\d{14}_[a-z0-9_]+$/;

/**
 * Default migrations folder: `prisma/migrations` of this project, wherever the process was started from.
 * Found through `__filename`, which tsx (CommonJS and ESM), vitest and Playwright all provide correctly
 * (`import.meta` breaks Playwright's CommonJS transform, and tsx's ESM mode gives a wrong `__dirname`).
 * Code bundled by Next.js must pass `migrationsDir` explicitly.
 */
export const DEFAULT_MIGRATIONS_DIR = resolve(dirname(__filename), "..", "prisma", "migrations");

/** Default function files folder: `prisma/functions` of this project, found like {@link DEFAULT_MIGRATIONS_DIR}. */
export const DEFAULT_FUNCTIONS_DIR = resolve(dirname(__filename), "..", "prisma", "functions");

/** The function file name rule: the function's own name, lower case, then `.sql`. */
const FUNCTION_FILE_PATTERN = /^([a-z_][a-z0-9_]*)\.sql$/;

export interface MigrateOptions {
  /** Folder holding `<timestamp>_<name>/migration.sql` folders. Default {@link DEFAULT_MIGRATIONS_DIR}. */
  migrationsDir?: string;
  /**
   * Folder holding the function files `<name>.sql`. Default: {@link DEFAULT_FUNCTIONS_DIR} when `migrationsDir` is
   * not given; otherwise the `functions` folder beside `migrationsDir`, or none when it does not exist (a checkout
   * from before function files, whose migrations define every function, e.g. an older release migrated to compare
   * it with this one).
   */
  functionsDir?: string;
  /** Receives one line per applied migration and function file (e.g. for a CLI to print). Default: silent. */
  log?: (line: string) => void;
  /**
   * How long to wait for another run's lock, in ms. Default 120 000: applying this project's migrations takes
   * about a second, so two minutes means the other run is stuck, and failing beats hanging a deploy or a test.
   */
  lockTimeoutMs?: number;
}

export interface MigrateResult {
  /** Names applied by this run, in order. */
  applied: string[];
  /** Names that were already applied (checksums verified), in order. */
  skipped: string[];
  /** Function files applied by this run (changed, new, or their function missing), by name, in order. */
  functionsApplied: string[];
  /** Function files left alone: recorded with their current checksum and their function present, in order. */
  functionsSkipped: string[];
}

/** A migration folder read from disk. */
export interface MigrationFile {
  name: string;
  /** Absolute path of its migration.sql. */
  path: string;
  sql: string;
  /** SHA-256 of the file's bytes, lower-case hex. */
  checksum: string;
}

/** A function file read from disk: `prisma/functions/<name>.sql`. */
export interface FunctionFile {
  /** The function's name, which is the file's name without `.sql`. */
  name: string;
  /** Absolute path of the file. */
  path: string;
  sql: string;
  /** SHA-256 of the file's bytes, lower-case hex. */
  checksum: string;
}

/** Thrown when the applied record and the files on disk disagree; `problems` lists each file concerned. */
export class MigrationMismatchError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `migrations on disk do not match the database, refusing to migrate:\n${problems.map((p) => `  - ${p}`).join("\n")}`,
    );
    this.name = "MigrationMismatchError";
  }
}

/**
 * Reads every migration folder under `migrationsDir`, sorted by name.
 *
 * Returns `{ name, path, sql, checksum }` per folder. Throws when the folder is missing, when an entry's name
 * breaks the `<14 digits>_<lower_case_name>` rule, or when a folder has no migration.sql (each would otherwise
 * be silently skipped and never applied).
 */
export function readMigrationFiles(migrationsDir: string = DEFAULT_MIGRATIONS_DIR): MigrationFile[] {
  if (!existsSync(migrationsDir)) throw new Error(`migrations folder not found: ${migrationsDir}`);
  const files: MigrationFile[] = [];
  for (const entry of readdirSync(migrationsDir, { withFileTypes: true })) {
    // Prisma keeps migration_lock.toml beside the folders; plain files are not migrations.
    if (!entry.isDirectory()) continue;
    if (!MIGRATION_NAME_PATTERN.test(entry.name)) {
      throw new Error(
        `migration folder ${join(migrationsDir, entry.name)} is not named <14-digit timestamp>_<lower_case_name>`,
      );
    }
    const path = join(migrationsDir, entry.name, "migration.sql");
    if (!existsSync(path)) throw new Error(`migration folder ${entry.name} has no migration.sql (${path})`);
    const bytes = readFileSync(path);
    files.push({
      name: entry.name,
      path,
      sql: bytes.toString("utf8"),
      checksum: createHash("sha256").update(bytes).digest("hex"),
    });
  }
  // Plain code-unit order: the fixed-width timestamp prefix makes it chronological, independent of locale.
  return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Reads every function file under `functionsDir`, sorted by name: the order `migrate` applies them in.
 *
 * Returns `{ name, path, sql, checksum }` per file. Throws when the folder is missing, when an entry is not a file
 * named `<lower_case_name>.sql`, or when a file does not hold exactly one function definition, starting a line as
 * `CREATE OR REPLACE FUNCTION <its name>(`: a plain CREATE FUNCTION fails the second time its file is applied, a file
 * named after another function would leave the one of its own name as it was, and a second function in a file would
 * have no file of its own.
 */
export function readFunctionFiles(functionsDir: string = DEFAULT_FUNCTIONS_DIR): FunctionFile[] {
  if (!existsSync(functionsDir)) throw new Error(`function files folder not found: ${functionsDir}`);
  const files: FunctionFile[] = [];
  for (const entry of readdirSync(functionsDir, { withFileTypes: true })) {
    const path = join(functionsDir, entry.name);
    const name = entry.isFile() ? FUNCTION_FILE_PATTERN.exec(entry.name)?.[1] : undefined;
    if (!name) throw new Error(`${path} is not a function file: every entry is a file <lower_case_function_name>.sql`);
    const bytes = readFileSync(path);
    const sql = bytes.toString("utf8");
    // Only at the start of a line: the header's `--` comments may name a statement without being one.
    const definitions = sql.match(/^CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+[^\s(]+\s*\(/gim) ?? [];
    if (definitions.length !== 1 || !new RegExp(`^CREATE OR REPLACE FUNCTION ${name}\\($`).test(definitions[0]!)) {
      throw new Error(
        `${path} must define exactly one function, as \`CREATE OR REPLACE FUNCTION ${name}(\` at the start of a line ` +
          `(found: ${definitions.length === 0 ? "none" : definitions.join("; ")})`,
      );
    }
    files.push({ name, path, sql, checksum: createHash("sha256").update(bytes).digest("hex") });
  }
  return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The function files of a run: from `options.functionsDir` when given; else {@link DEFAULT_FUNCTIONS_DIR} when
 * `options.migrationsDir` is not given either; else the `functions` folder beside `migrationsDir`, or none when it
 * does not exist (a checkout from before function files defines every function in its migrations).
 */
function functionFilesFor(options: Pick<MigrateOptions, "migrationsDir" | "functionsDir">): FunctionFile[] {
  if (options.functionsDir !== undefined) return readFunctionFiles(options.functionsDir);
  if (options.migrationsDir === undefined) return readFunctionFiles(DEFAULT_FUNCTIONS_DIR);
  const beside = join(options.migrationsDir, "..", "functions");
  return existsSync(beside) ? readFunctionFiles(beside) : [];
}

/** What the database has applied compared with the files on disk: see {@link checkMigrations}. */
export interface MigrationStatus {
  /** Names on disk and recorded with the same checksum, in order. */
  applied: string[];
  /** Names on disk with no record yet (what `migrate` would apply), in order. */
  pending: string[];
  /** A sentence per recorded migration whose file changed or is gone; non-empty means `migrate` refuses. */
  mismatches: string[];
  /**
   * Function files `migrate` would apply, by name, in order: never applied (no record in `_schema_functions`),
   * changed since they were applied, or whose function is missing from the schema.
   */
  functionsPending: string[];
}

/** What the database holds about the function files: their records, and the names of the functions present. */
interface FunctionState {
  recorded: { name: string; checksum: string }[];
  /** Names of the functions in the schema the files create them in (`current_schema()`). */
  present: Set<string>;
}

/** The function files split by what `migrate` does with them. Pure. */
function compareFunctionsWithRecord(
  files: FunctionFile[],
  state: FunctionState,
): { pending: FunctionFile[]; unchanged: string[]; forgotten: string[] } {
  const recorded = new Map(state.recorded.map((row) => [row.name, row.checksum]));
  const onDisk = new Set(files.map((file) => file.name));
  const pending = files.filter((file) => recorded.get(file.name) !== file.checksum || !state.present.has(file.name));
  const unchanged = files.filter((file) => !pending.includes(file)).map((file) => file.name);
  // The record of a file that is gone (its function dropped by a numbered migration) is removed, so that a file of
  // that name added later is applied even if its text is the same as the old one's.
  const forgotten = state.recorded.map((row) => row.name).filter((name) => !onDisk.has(name));
  return { pending, unchanged, forgotten };
}

/**
 * Reads `_schema_functions` (none when the table does not exist: `checkMigrations` creates nothing) and the names of
 * the functions in `current_schema()`, where the files' unqualified CREATE OR REPLACE FUNCTION puts them.
 */
async function readFunctionState(client: pg.Client): Promise<FunctionState> {
  // to_regclass resolves the name through search_path exactly as migrate()'s unqualified CREATE TABLE does.
  const table = await client.query<{ found: boolean }>("SELECT to_regclass('_schema_functions') IS NOT NULL AS found");
  const recorded = table.rows[0]?.found
    ? (await client.query<{ name: string; checksum: string }>("SELECT name, checksum FROM _schema_functions")).rows
    : [];
  const present = await client.query<{ name: string }>(
    "SELECT DISTINCT proname AS name FROM pg_proc WHERE pronamespace = to_regnamespace(current_schema())",
  );
  return { recorded, present: new Set(present.rows.map((row) => row.name)) };
}

/**
 * Compares the applied record (`_schema_migrations` rows) with the files on disk. Pure.
 * Returns the {@link MigrationStatus}: a recorded file whose SHA-256 changed, or a recorded name with no folder,
 * is a mismatch (an applied migration is never edited: a change goes in a new one). A recorded checksum listed in
 * {@link EARLIER_CHECKSUMS} for that name (a comment-only edit) matches.
 */
function compareWithRecord(
  files: MigrationFile[],
  recorded: { name: string; checksum: string }[],
): Omit<MigrationStatus, "functionsPending"> {
  const onDisk = new Map(files.map((file) => [file.name, file]));
  const mismatches: string[] = [];
  for (const row of recorded) {
    const file = onDisk.get(row.name);
    if (!file) {
      mismatches.push(`${row.name} is recorded as applied but its folder is missing from disk`);
    } else if (file.checksum !== row.checksum && !EARLIER_CHECKSUMS[row.name]?.includes(row.checksum)) {
      mismatches.push(
        `${file.path} changed after it was applied (recorded sha256 ${row.checksum}, file ${file.checksum}); ` +
          "restore it and put the change in a new migration",
      );
    }
  }
  const recordedNames = new Set(recorded.map((row) => row.name));
  const status: Omit<MigrationStatus, "functionsPending"> = { applied: [], pending: [], mismatches };
  for (const file of files) (recordedNames.has(file.name) ? status.applied : status.pending).push(file.name);
  return status;
}

/**
 * Reads, without changing anything, which migrations and function files the database at `databaseUrl` has applied:
 * for a server to refuse to start on a schema it was not built for (`npm start`). Takes no lock and creates nothing;
 * a database without `_schema_migrations` has every migration pending, and one without `_schema_functions` every
 * function file. `options.migrationsDir` and `options.functionsDir` are read as {@link migrate} reads them.
 *
 * Returns the {@link MigrationStatus} (names in order). Throws when the migrations or function files cannot be read
 * (see {@link readMigrationFiles}, {@link readFunctionFiles}) and rethrows connection and query errors as pg gives
 * them (with `.code`, e.g. ECONNREFUSED, 28P01, 3D000). Connects with a 10 s timeout.
 */
export async function checkMigrations(
  databaseUrl: string,
  options: Pick<MigrateOptions, "migrationsDir" | "functionsDir"> = {},
): Promise<MigrationStatus> {
  const files = readMigrationFiles(options.migrationsDir);
  const functionFiles = functionFilesFor(options);
  const client = await connect(databaseUrl, "wallet-migrate-check");
  try {
    // to_regclass resolves the name through search_path exactly as migrate()'s unqualified CREATE TABLE does.
    const table = await client.query<{ found: boolean }>(
      "SELECT to_regclass('_schema_migrations') IS NOT NULL AS found",
    );
    const recorded = table.rows[0]?.found
      ? (
          await client.query<{ name: string; checksum: string }>(
            "SELECT name, checksum FROM _schema_migrations ORDER BY name",
          )
        ).rows
      : [];
    const functions = compareFunctionsWithRecord(functionFiles, await readFunctionState(client));
    return { ...compareWithRecord(files, recorded), functionsPending: functions.pending.map((file) => file.name) };
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Applies every pending migration to the database at `databaseUrl`, then every function file that changed since it
 * was applied (or was never applied, or whose function is missing), all of those in one transaction.
 *
 * Returns `{ applied, skipped, functionsApplied, functionsSkipped }` (names, in order); a second run applies
 * nothing. Throws {@link MigrationMismatchError} (and applies nothing) when an applied migration's checksum changed
 * or its file is missing; throws an Error naming the migration when one fails (that migration is rolled back,
 * earlier ones stay applied, no function file is applied); throws an Error naming the function file when one fails
 * (every function file of the run is rolled back and none is recorded; the migrations stay applied); throws when a
 * folder cannot be read ({@link readMigrationFiles}, {@link readFunctionFiles}) or the lock is not obtained within
 * `lockTimeoutMs`; connection errors are rethrown as is (pg's errors carry `.code`, e.g. ECONNREFUSED or 3D000).
 */
export async function migrate(databaseUrl: string, options: MigrateOptions = {}): Promise<MigrateResult> {
  const files = readMigrationFiles(options.migrationsDir);
  const functionFiles = functionFilesFor(options);
  const log = options.log ?? (() => {});
  const lockTimeoutMs = options.lockTimeoutMs ?? 120_000;

  const client = await connect(databaseUrl, "wallet-migrate");
  try {
    // lock_timeout bounds the wait for the advisory lock (a heavyweight lock); it is reset before any
    // migration runs, so migrations themselves wait for their locks as long as they need.
    await client.query(`SET lock_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
    try {
      await client.query("SELECT pg_advisory_lock($1::bigint)", [MIGRATION_LOCK_KEY]);
    } catch (error) {
      if ((error as { code?: string }).code === "55P03") {
        throw new Error(`another migration run held the lock for more than ${lockTimeoutMs} ms; is one stuck?`, {
          cause: error,
        });
      }
      throw error;
    }
    await client.query("RESET lock_timeout");
    try {
      const migrations = await applyPending(client, files, log);
      const functions = await applyFunctionFiles(client, functionFiles, log);
      return { ...migrations, functionsApplied: functions.applied, functionsSkipped: functions.skipped };
    } finally {
      await client.query("SELECT pg_advisory_unlock($1::bigint)", [MIGRATION_LOCK_KEY]).catch(() => {});
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/** A connected client for one run, named `applicationName` in pg_stat_activity. */
async function connect(databaseUrl: string, applicationName: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    application_name: applicationName,
    // 10 s to connect: a local or same-region server answers in milliseconds; past that it is down.
    connectionTimeoutMillis: 10_000,
  });
  // An error on the idle connection (server restart) surfaces through the next query; do not crash.
  client.on("error", () => {});
  await client.connect();
  return client;
}

async function applyPending(
  client: pg.Client,
  files: MigrationFile[],
  log: (line: string) => void,
): Promise<Pick<MigrateResult, "applied" | "skipped">> {
  // Created under the lock, so two first runs cannot race on the catalog.
  await client.query(`
    CREATE TABLE IF NOT EXISTS _schema_migrations (
      name        text PRIMARY KEY,
      checksum    text NOT NULL CHECK (checksum ~ '^[0-9a-f]{64}$'),
      applied_at  timestamptz NOT NULL DEFAULT now()
    )`);
  const recorded = await client.query<{ name: string; checksum: string }>(
    "SELECT name, checksum FROM _schema_migrations ORDER BY name",
  );

  const status = compareWithRecord(files, recorded.rows);
  if (status.mismatches.length > 0) throw new MigrationMismatchError(status.mismatches);

  const pending = new Set(status.pending);
  const result: Pick<MigrateResult, "applied" | "skipped"> = { applied: [], skipped: status.applied };
  for (const file of files) {
    if (!pending.has(file.name)) continue;
    try {
      await client.query("BEGIN");
      await client.query(file.sql);
      await client.query("INSERT INTO _schema_migrations (name, checksum) VALUES ($1, $2)", [file.name, file.checksum]);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`migration ${file.name} failed and was rolled back: ${message}`, { cause: error });
    }
    result.applied.push(file.name);
    log(`applied ${file.name}`);
  }
  return result;
}

/**
 * Applies the function files that changed, have no record or whose function is missing, in name order, in one
 * transaction with their records in `_schema_functions` (and the removal of the records of files that are gone).
 * Runs under the migration lock, after the numbered migrations. Returns the names applied and the names left alone;
 * throws an Error naming the file that failed, after rolling back every file of the run.
 */
async function applyFunctionFiles(
  client: pg.Client,
  files: FunctionFile[],
  log: (line: string) => void,
): Promise<{ applied: string[]; skipped: string[] }> {
  // Created under the lock, so two first runs cannot race on the catalog.
  await client.query(`
    CREATE TABLE IF NOT EXISTS _schema_functions (
      name        text PRIMARY KEY,
      checksum    text NOT NULL CHECK (checksum ~ '^[0-9a-f]{64}$'),
      applied_at  timestamptz NOT NULL DEFAULT now()
    )`);
  const { pending, unchanged, forgotten } = compareFunctionsWithRecord(files, await readFunctionState(client));
  if (pending.length === 0 && forgotten.length === 0) return { applied: [], skipped: unchanged };

  // All in one transaction: a file that fails leaves every function and every record as it was, so the database
  // never holds some of a change's functions without the others (the deciding functions call each other).
  let current: FunctionFile | null = null;
  try {
    await client.query("BEGIN");
    for (const file of pending) {
      current = file;
      await client.query(file.sql);
      await client.query(
        `INSERT INTO _schema_functions (name, checksum, applied_at) VALUES ($1, $2, now())
         ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = EXCLUDED.applied_at`,
        [file.name, file.checksum],
      );
    }
    current = null;
    await client.query("DELETE FROM _schema_functions WHERE name = ANY($1::text[])", [forgotten]);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    const message = error instanceof Error ? error.message : String(error);
    const what = current ? `function file ${current.path} failed` : "function files failed at their commit";
    throw new Error(`${what}; all ${pending.length} changed function file(s) were rolled back: ${message}`, {
      cause: error,
    });
  }
  for (const name of forgotten) log(`forgot function ${name}: its file is gone`);
  for (const file of pending) log(`applied function ${file.name}`);
  return { applied: pending.map((file) => file.name), skipped: unchanged };
}
