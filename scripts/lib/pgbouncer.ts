/**
 * PgBouncer (apt `pgbouncer`, 1.18 on Debian 12) in front of a PostgreSQL, on 127.0.0.1, for the pooler test and
 * `npm run cluster -- --pooler`. It refuses to run as root, so when we are root it runs as the `postgres` user
 * through `setpriv` (docs/development.md note 26: runuser and `cd ... && cmd &` record the wrong PID).
 */
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { createConnection } from "node:net";
import { freePort, sleep } from "./ports";
import { spawnService, type Service } from "./processes";

/** Where Debian's package installs the binary. */
const PGBOUNCER_BINARY = "/usr/sbin/pgbouncer";

/** True when apt's pgbouncer is installed. */
export function pgbouncerInstalled(): boolean {
  return existsSync(PGBOUNCER_BINARY);
}

export interface PgBouncer {
  /** `postgres://<user>:<password>@127.0.0.1:<port>/<database>` through the pooler. */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** Stops PgBouncer (SIGTERM, then SIGKILL) and deletes its folder. Safe to call twice. */
  stop(): Promise<void>;
}

export interface StartPgBouncerOptions {
  /** The PostgreSQL behind it: host, port, database, and a user with its password (for the server login). */
  readonly serverHost: string;
  readonly serverPort: number;
  readonly database: string;
  readonly user: string;
  readonly password: string;
  /** `transaction` (the mode the app must survive) or `session`. */
  readonly poolMode: "transaction" | "session";
  /**
   * Server connections per database and user. Default 4: far fewer than the clients, so consecutive transactions
   * of one client really land on different server connections (the condition that breaks named statements).
   */
  readonly poolSize?: number;
  /** Port on 127.0.0.1; default a free one. */
  readonly port?: number;
  /** Log destination as in spawnService. Default "silent". */
  readonly log?: string;
}

/** How long PgBouncer may take to accept connections. 10 s: it is ready in ~50 ms. */
const READY_TIMEOUT_MS = 10_000;

/**
 * Writes a config (clients: `trust` on loopback; server: the given password from the auth file) and starts
 * PgBouncer. Returns once its port accepts connections. Throws, naming the apt package, when it is not installed,
 * or with its output when it exits or does not listen within 10 s.
 */
export async function startPgBouncer(options: StartPgBouncerOptions): Promise<PgBouncer> {
  if (!pgbouncerInstalled()) throw new Error("pgbouncer is not installed: run `apt-get install -y pgbouncer`");
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), "pgbouncer-"));
  const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;
  writeFileSync(join(dir, "userlist.txt"), `${quote(options.user)} ${quote(options.password)}\n`, { mode: 0o600 });
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `${options.database} = host=${options.serverHost} port=${options.serverPort} dbname=${options.database}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "userlist.txt")}`,
      `pool_mode = ${options.poolMode}`,
      `default_pool_size = ${options.poolSize ?? 4}`,
      // 1000 clients: several app instances with 20-connection pools plus tools never hit this limit.
      "max_client_conn = 1000",
      // node-postgres sends extra_float_digits at startup; the app sends no other startup parameter behind a
      // transaction pooler (DB_POOLER=transaction), so `options` stays refused rather than silently dropped.
      "ignore_startup_parameters = extra_float_digits",
      // A server connection is given back after each transaction; nothing session-level may survive it.
      "server_reset_query = DISCARD ALL",
      "admin_users =",
      "",
    ].join("\n"),
  );
  const runAs = userInfo().uid === 0 ? "postgres" : null;
  if (runAs) {
    const { uid, gid } = postgresIds();
    for (const file of ["", "userlist.txt", "pgbouncer.ini"]) chownSync(join(dir, file), uid, gid);
  }
  const service: Service = spawnService({
    name: "pgbouncer",
    command: runAs ? "setpriv" : PGBOUNCER_BINARY,
    args: runAs
      ? ["--reuid=postgres", "--regid=postgres", "--init-groups", PGBOUNCER_BINARY, join(dir, "pgbouncer.ini")]
      : [join(dir, "pgbouncer.ini")],
    log: options.log ?? "silent",
  });
  const stop = async () => {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, service);
  } catch (error) {
    await stop();
    throw error;
  }
  const auth = `${encodeURIComponent(options.user)}:${encodeURIComponent(options.password)}`;
  return { url: `postgres://${auth}@127.0.0.1:${port}/${options.database}`, port, pid: service.pid, stop };
}

function postgresIds(): { uid: number; gid: number } {
  const passwd = readFileSync("/etc/passwd", "utf8");
  const line = passwd.split("\n").find((entry) => entry.startsWith("postgres:"));
  if (!line) throw new Error("no postgres user: install postgresql or start the embedded PostgreSQL once");
  const fields = line.split(":");
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

async function waitForPort(port: number, service: Service): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const exit = service.exitStatus();
    if (exit) throw new Error(`pgbouncer exited (code ${exit.code}):\n${service.recentOutput()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: "127.0.0.1", port });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port}:\n${service.recentOutput()}`);
    // 50 ms between probes: it starts in tens of milliseconds.
    await sleep(50);
  }
}
