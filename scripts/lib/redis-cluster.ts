/**
 * A Redis Cluster on 127.0.0.1 for tests and `npm run cluster` (docs/development.md note 28): `masters` masters with
 * `replicasPerMaster` replicas each, made of apt's redis-server 7.0 with `cluster-enabled yes` and joined by
 * `redis-cli --cluster create`. Ready only when every node says `cluster_state:ok` and every replica's link to its
 * master is up (the cluster says ok before replicas have synced).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Redis from "ioredis";
import { freePort, sleep } from "./ports";
import { startRedisServer, type RedisServer } from "./redis-server";

export interface ClusterNode {
  readonly port: number;
  /** PID of the node's redis-server (SIGSTOP/SIGKILL it to stage faults). */
  readonly pid: number;
}

export interface NodeRole {
  readonly port: number;
  readonly id: string;
  readonly role: "master" | "replica";
  /** For a replica: the port of its master. */
  readonly masterPort: number | null;
  /** The node is marked failed by the cluster. */
  readonly failed: boolean;
}

export interface RedisCluster {
  readonly nodes: readonly ClusterNode[];
  /** `127.0.0.1:p1,127.0.0.1:p2,...`: the value of REDIS_CLUSTER_NODES. */
  readonly seeds: string;
  /** Roles as the cluster sees them now (CLUSTER NODES on the first node that answers). */
  roles(): Promise<NodeRole[]>;
  /** Waits until every live node says cluster_state:ok and every replica's master link is up (bounded). */
  waitHealthy(timeoutMs: number): Promise<void>;
  /** SIGKILLs the node on `port` and forgets it (it is not restarted). */
  kill(port: number): Promise<void>;
  /** Stops every node and deletes the data folder. Safe to call twice. */
  stop(): Promise<void>;
}

/** `redis-cli` from apt's redis-tools (a dependency of redis-server). */
const REDIS_CLI = "redis-cli";

/**
 * Starts the nodes, joins them, waits until healthy. `nodeTimeoutMs` is cluster-node-timeout: 2000 gave a
 * replica take-over in ~4.7 s here (docs/development.md note 28); Redis's default (15 s) would make every test wait.
 * Throws, after stopping what it started, when `redis-cli --cluster create` fails or the cluster is not healthy
 * within `readyTimeoutMs`.
 */
export async function startRedisCluster(
  options: {
    masters?: number;
    replicasPerMaster?: number;
    nodeTimeoutMs?: number;
    readyTimeoutMs?: number;
    logDir?: string;
    ports?: number[];
  } = {},
): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 1;
  const count = masters * (1 + replicas);
  const dir = mkdtempSync(join(tmpdir(), "redis-cluster-"));
  const servers = new Map<number, RedisServer>();
  const stop = async () => {
    await Promise.all([...servers.values()].map((server) => server.stop()));
    servers.clear();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ports = options.ports ?? (await Promise.all(Array.from({ length: count }, () => freePort())));
    for (const port of ports) {
      const nodeDir = join(dir, String(port));
      mkdirSync(nodeDir, { recursive: true });
      const server = await startRedisServer({
        port,
        cwd: nodeDir,
        log: options.logDir ? join(options.logDir, `redis-${port}.log`) : "silent",
        extraArgs: [
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          "nodes.conf",
          "--cluster-node-timeout",
          String(options.nodeTimeoutMs ?? 2000),
          // A replica that lost its master may be promoted however stale it is: the failover of docs/development.md
          // note 28, which the app must survive (the ledger holds the cap).
          "--cluster-replica-validity-factor",
          "0",
        ],
      });
      servers.set(port, server);
    }
    const created = spawnSync(
      REDIS_CLI,
      [
        "--cluster",
        "create",
        ...ports.map((port) => `127.0.0.1:${port}`),
        "--cluster-replicas",
        String(replicas),
        "--cluster-yes",
      ],
      { encoding: "utf8", timeout: 60_000 },
    );
    if (created.status !== 0) {
      throw new Error(`redis-cli --cluster create failed (${created.status}): ${created.stdout}\n${created.stderr}`);
    }
    const cluster: RedisCluster = {
      nodes: ports.map((port) => ({ port, pid: servers.get(port)!.pid })),
      seeds: ports.map((port) => `127.0.0.1:${port}`).join(","),
      roles: () => readRoles([...servers.keys()]),
      async waitHealthy(timeoutMs) {
        const deadline = Date.now() + timeoutMs;
        let last = "";
        for (;;) {
          last = await healthProblem([...servers.keys()]);
          if (last === "") return;
          if (Date.now() > deadline) throw new Error(`Redis Cluster not healthy after ${timeoutMs} ms: ${last}`);
          // 100 ms between checks: replicas sync in well under a second on loopback.
          await sleep(100);
        }
      },
      async kill(port) {
        const server = servers.get(port);
        if (!server) return;
        process.kill(server.pid, "SIGKILL");
        await server.stop();
        servers.delete(port);
      },
      stop,
    };
    await cluster.waitHealthy(options.readyTimeoutMs ?? 30_000);
    return cluster;
  } catch (error) {
    await stop();
    throw error;
  }
}

async function withNode<T>(port: number, work: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({
    host: "127.0.0.1",
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    commandTimeout: 1000,
  });
  client.on("error", () => {});
  try {
    await client.connect();
    return await work(client);
  } finally {
    client.disconnect();
  }
}

/** "" when healthy, else what is wrong. */
async function healthProblem(ports: number[]): Promise<string> {
  for (const port of ports) {
    try {
      const info = await withNode(port, async (client) => ({
        cluster: String(await client.call("CLUSTER", "INFO")),
        replication: await client.info("replication"),
      }));
      if (!info.cluster.includes("cluster_state:ok")) return `node ${port}: cluster_state not ok`;
      if (info.replication.includes("role:slave") && !info.replication.includes("master_link_status:up")) {
        return `replica ${port}: master link not up`;
      }
    } catch (error) {
      return `node ${port}: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  return "";
}

async function readRoles(ports: number[]): Promise<NodeRole[]> {
  for (const port of ports) {
    try {
      const text = String(await withNode(port, (client) => client.call("CLUSTER", "NODES")));
      const lines = text.trim().split("\n");
      const byId = new Map<string, number>();
      for (const line of lines) {
        const [id, address] = line.split(" ");
        byId.set(id!, Number(address!.split("@")[0]!.split(":")[1]));
      }
      return lines.map((line) => {
        const [id, , flags, masterId] = line.split(" ");
        const replica = flags!.includes("slave");
        return {
          port: byId.get(id!)!,
          id: id!,
          role: replica ? "replica" : "master",
          masterPort: replica ? (byId.get(masterId!) ?? null) : null,
          failed: flags!.includes("fail"),
        };
      });
    } catch {
      // This node is down; ask the next one.
    }
  }
  throw new Error("no Redis Cluster node answered CLUSTER NODES");
}
