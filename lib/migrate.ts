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

export interface MigrateOptions {
  /** Folder holding `<timestamp>_<name>/migration.sql` folders. Default {@link DEFAULT_MIGRATIONS_DIR}. */
  migrationsDir?: string;
  /** Receives one line per applied migration (e.g. for a CLI to print). Default: silent. */
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

/** What the database has applied compared with the files on disk: see {@link checkMigrations}. */
export interface MigrationStatus {
  /** Names on disk and recorded with the same checksum, in order. */
  applied: string[];
  /** Names on disk with no record yet (what `migrate` would apply), in order. */
  pending: string[];
  /** A sentence per recorded migration whose file changed or is gone; non-empty means `migrate` refuses. */
  mismatches: string[];
}

/**
 * Compares the applied record (`_schema_migrations` rows) with the files on disk. Pure.
 * Returns the {@link MigrationStatus}: a recorded file whose SHA-256 changed, or a recorded name with no folder,
 * is a mismatch (an applied migration is never edited: a change goes in a new one). A recorded checksum listed in
 * {@link EARLIER_CHECKSUMS} for that name (a comment-only edit) matches.
 */
function compareWithRecord(files: MigrationFile[], recorded: { name: string; checksum: string }[]): MigrationStatus {
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
  const status: MigrationStatus = { applied: [], pending: [], mismatches };
  for (const file of files) (recordedNames.has(file.name) ? status.applied : status.pending).push(file.name);
  return status;
}

/**
 * Reads, without changing anything, which migrations the database at `databaseUrl` has applied: for a server to
 * refuse to start on a schema it was not built for (`npm start`). Takes no lock and creates nothing; a
 * database without `_schema_migrations` has every migration pending.
 *
 * Returns the {@link MigrationStatus} (names in order). Throws when the migrations folder cannot be read (see
 * {@link readMigrationFiles}) and rethrows connection and query errors as pg gives them (with `.code`, e.g.
 * ECONNREFUSED, 28P01, 3D000). Connects with a 10 s timeout.
 */
export async function checkMigrations(
  databaseUrl: string,
  options: Pick<MigrateOptions, "migrationsDir"> = {},
): Promise<MigrationStatus> {
  const files = readMigrationFiles(options.migrationsDir);
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
    return compareWithRecord(files, recorded);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Applies every pending migration to the database at `databaseUrl`.
 *
 * Returns `{ applied, skipped }` (names, in order); a second run returns `applied: []`. Throws
 * {@link MigrationMismatchError} (and applies nothing) when an applied migration's checksum changed or its file is
 * missing; throws an Error naming the migration when one fails (that migration is rolled back, earlier ones stay
 * applied); throws when the lock is not obtained within `lockTimeoutMs`; connection errors are rethrown as is
 * (pg's errors carry `.code`, e.g. ECONNREFUSED or 3D000).
 */
export async function migrate(databaseUrl: string, options: MigrateOptions = {}): Promise<MigrateResult> {
  const files = readMigrationFiles(options.migrationsDir);
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
      return await applyPending(client, files, log);
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
): Promise<MigrateResult> {
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
  const result: MigrateResult = { applied: [], skipped: status.applied };
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
