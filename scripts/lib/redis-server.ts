/**
 * A throwaway redis-server for tests, CI and the demo. No npm package ships a server binary, so it comes from
 * apt (`apt-get install -y redis-server`, Redis 7.0.x on Debian 12), and is always started with
 * `--bind 127.0.0.1 --port <port> --save '' --appendonly no` (docs/development.md note 4): without a config file Redis
 * would listen on every interface, and the cap store needs no persistence (the ledger is the source of truth,
 * contract section 6).
 */
import { accessSync, constants } from "node:fs";
import { connect } from "node:net";
import { delimiter, join } from "node:path";
import { freePort, sleep } from "./ports";
import { spawnService, type Service } from "./processes";

export interface RedisServer {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** PID of redis-server (tests may `kill -STOP`/`-CONT` it to stall Redis, docs/development.md note 20). */
  pid: number;
  /** Stops the server (SIGTERM, SIGKILL after 10 s). Safe to call twice. */
  stop(): Promise<void>;
}

export interface StartRedisServerOptions {
  /** TCP port on 127.0.0.1; default: a free one. */
  port?: number;
  /** Log destination for the server's output, as in `spawnService` ("stderr", "silent" or a file). Default "silent". */
  log?: string;
  /** More redis-server flags after the safe defaults (e.g. `--cluster-enabled yes` for a Cluster node). */
  extraArgs?: string[];
  /** Working folder of the server (cluster nodes keep their nodes.conf there). Default: this process's. */
  cwd?: string;
}

/** Folders searched after PATH: where Debian's package and a source build put the binary. */
const WELL_KNOWN_DIRS = ["/usr/bin", "/usr/local/bin", "/usr/sbin"];

/**
 * Finds an executable `redis-server` on PATH or in /usr/bin, /usr/local/bin, /usr/sbin.
 * Returns its absolute path, or null when there is none (install with `apt-get install -y redis-server`).
 */
export function findRedisServerBinary(): string | null {
  const dirs = [...(process.env.PATH ?? "").split(delimiter).filter(Boolean), ...WELL_KNOWN_DIRS];
  for (const dir of dirs) {
    const candidate = join(dir, "redis-server");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here; keep looking.
    }
  }
  return null;
}

/** How long redis-server may take to answer. 10 s: it is ready in ~20 ms; a slow CI disk is no factor. */
const READY_TIMEOUT_MS = 10_000;

/**
 * Spawns redis-server on 127.0.0.1 (note 4 flags) and waits until it answers as itself (the `process_id`
 * in `INFO server` must be the PID it spawned, not another server already on the port).
 *
 * Returns `{ url, port, pid, stop }`. Throws when no binary is found (naming the apt package), when the server
 * exits during start-up (with its output, e.g. "Address already in use"), or when it does not answer
 * within 10 s (after stopping it).
 */
export async function startRedisServer(options: StartRedisServerOptions = {}): Promise<RedisServer> {
  const binary = findRedisServerBinary();
  if (!binary) {
    throw new Error("redis-server not found: install it with `apt-get install -y redis-server`");
  }
  if (options.port !== undefined) return startOn(binary, options.port, options);
  // A free port can be taken by another process between freePort() and the bind; 3 attempts make that race
  // (already rare) irrelevant, while a real problem still fails quickly.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOn(binary, await freePort(), options);
    } catch (error) {
      const inUse = error instanceof Error && /Address already in use/i.test(error.message);
      if (!inUse || attempt >= 3) throw error;
    }
  }
}

async function startOn(binary: string, port: number, options: StartRedisServerOptions): Promise<RedisServer> {
  const service = spawnService({
    name: `redis:${port}`,
    command: binary,
    // `--save ''` turns off RDB snapshots and `--appendonly no` the AOF; `--dir` is left at the working
    // folder, which nothing is ever written to with both off (a Cluster node writes its nodes.conf there).
    args: [
      "--bind",
      "127.0.0.1",
      "--port",
      String(port),
      "--save",
      "",
      "--appendonly",
      "no",
      "--daemonize",
      "no",
      ...(options.extraArgs ?? []),
    ],
    cwd: options.cwd,
    log: options.log ?? "silent",
  });
  try {
    await waitForPong(port, service);
  } catch (error) {
    await service.stop();
    throw error;
  }
  return { url: `redis://127.0.0.1:${port}`, port, pid: service.pid, stop: service.stop };
}

async function waitForPong(port: number, service: Service): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = "no attempt made";
  for (;;) {
    const exit = service.exitStatus();
    if (exit) {
      throw new Error(
        `redis-server exited during start-up (code ${exit.code}, signal ${exit.signal}):\n${service.recentOutput()}`,
      );
    }
    try {
      const answeringPid = await serverPid(port);
      // Another server already on this port would answer too: only our own process counts as ready.
      if (answeringPid === service.pid) return;
      last = `port ${port} is answered by another redis-server (pid ${answeringPid})`;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() >= deadline) {
      throw new Error(`redis-server on port ${port} did not answer within ${READY_TIMEOUT_MS} ms (${last})`);
    }
    // 50 ms between attempts: Redis starts in tens of milliseconds, so this keeps start-up fast.
    await sleep(50);
  }
}

/**
 * Asks the server on `port` for `INFO server` over a raw socket (an inline command; no client library needed)
 * and resolves with its `process_id`. 1 s bound per attempt.
 */
function serverPid(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let reply = "";
    socket.setTimeout(1000, () => socket.destroy(new Error("INFO timed out")));
    socket.once("error", reject);
    socket.on("data", (chunk) => {
      reply += chunk.toString("utf8");
      const header = /^\$(\d+)\r\n/.exec(reply);
      if (reply.startsWith("-")) {
        socket.destroy();
        reject(new Error(`redis answered ${reply.trim()}`));
        return;
      }
      // A bulk string: `$<length>\r\n<payload>\r\n`; wait until the whole payload is in.
      if (!header || Buffer.byteLength(reply) < header[0].length + Number(header[1])) return;
      socket.end();
      const pid = /process_id:(\d+)/.exec(reply);
      if (pid) resolve(Number(pid[1]));
      else reject(new Error("INFO server has no process_id"));
    });
    socket.once("connect", () => socket.write("INFO server\r\n"));
  });
}
