/**
 * A production-shaped topology on 127.0.0.1 with existing engines only (docs/development.md notes 26-29):
 *  - etcd (one member) as Patroni's store;
 *  - three PostgreSQL 15 nodes under Patroni with strict synchronous replication;
 *  - HAProxy: writes to whichever node answers 200 on Patroni's `GET /primary`, and the app instances behind one
 *    HTTP frontend (checked on `GET /api/v1/health/live`, POSTs never replayed by the balancer);
 *  - optionally PgBouncer in transaction pooling between HAProxy and the app (`pooler`);
 *  - a 6-node Redis Cluster (3 masters, 3 replicas);
 *  - the sandbox bank, N `next start` instances and the reconciler as its own process.
 * Everything runs from apt's packages; nothing is installed here. PostgreSQL, Patroni and PgBouncer refuse to run
 * as root, so they run as `postgres` through `setpriv` (docs/development.md note 26). Every process is started with
 * scripts/lib/processes.ts and stopped by PID (process group) in `stop()`.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { migrate } from "../../lib/migrate";
import { freePort, sleep, waitForHttp } from "./ports";
import { signalGroup, spawnService, type Service } from "./processes";
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from "./pgbouncer";
import { startRedisCluster, type RedisCluster } from "./redis-cluster";
import { findRedisServerBinary } from "./redis-server";
import { childEnvironment, projectRoot, spawnApp, spawnBank } from "./stack";

/** PostgreSQL 15's binaries from apt (docs/development.md notes 13 and 26). */
export const PG15_BIN = "/usr/lib/postgresql/15/bin";

/** Each engine, where apt puts it, and the package that brings it. */
const REQUIRED: readonly { path: string; apt: string; pooler?: boolean; backups?: boolean }[] = [
  { path: `${PG15_BIN}/postgres`, apt: "postgresql-15" },
  { path: "/usr/bin/patroni", apt: "patroni" },
  { path: "/usr/bin/etcd", apt: "etcd-server" },
  { path: "/usr/bin/etcdctl", apt: "etcd-client" },
  { path: "/usr/sbin/haproxy", apt: "haproxy" },
  { path: "/usr/lib/python3/dist-packages/etcd/__init__.py", apt: "python3-etcd" },
  { path: "/usr/bin/redis-cli", apt: "redis-tools" },
  { path: "/usr/sbin/pgbouncer", apt: "pgbouncer", pooler: true },
  { path: "/usr/bin/pgbackrest", apt: "pgbackrest", backups: true },
];

/**
 * The apt packages missing for a cluster (with the pooler and/or backups when asked). Empty when everything is
 * there. redis-server is looked up like the test stack does.
 */
export function missingClusterPackages(options: { pooler?: boolean; backups?: boolean } = {}): string[] {
  const missing = REQUIRED.filter(
    (item) => (!item.pooler || options.pooler) && (!item.backups || options.backups) && !existsSync(item.path),
  ).map((item) => item.apt);
  if (!findRedisServerBinary()) missing.push("redis-server");
  return missing;
}

/** The app's database role and its password are generated per cluster; the superuser is `postgres`. */
const APP_ROLE = "wallet";
const DATABASE = "wallet";

export interface HaClusterOptions {
  /** Number of `next start` instances behind HAProxy. Default 3. 0 starts no app (a test of the engines). */
  readonly appInstances?: number;
  /** PgBouncer in transaction pooling between HAProxy and the app (`--pooler`). */
  readonly pooler?: boolean;
  /** WAL archiving to a pgBackRest repository (for backups and the restore drill). */
  readonly backups?: boolean;
  /** Port of HAProxy's app frontend on 127.0.0.1. Default: a free one. */
  readonly appPort?: number;
  /** Port of HAProxy's PostgreSQL write frontend. Default: a free one. */
  readonly pgWritePort?: number;
  /** Extra environment for the app instances (e.g. the storm's lease and cap settings). */
  readonly appEnv?: Record<string, string>;
  /** Extra environment for the bank (the storm's fault rates). */
  readonly bankEnv?: Record<string, string>;
  /** Where every service's log goes (a folder; created). */
  readonly logDir: string;
  /**
   * Patroni's leader key TTL, s. 20 by default: on 2 cores under load a 10 s TTL let Patroni fail over spuriously;
   * a lost node is then detected after at most ~20 s. The cluster script
   * uses 10 for faster failovers when the machine is quiet.
   */
  readonly patroniTtlS?: number;
  /** Start the reconciler process. Default true. */
  readonly reconciler?: boolean;
}

export interface PgNode {
  readonly name: string;
  readonly port: number;
  readonly apiPort: number;
  readonly dataDir: string;
}

export interface HaCluster {
  readonly root: string;
  /** HAProxy's app frontend: what users and the storm talk to. */
  readonly appUrl: string;
  /** Each app instance directly (for the summary; clients go through HAProxy). */
  readonly instanceUrls: readonly string[];
  /** The app's database URL (through HAProxy, or PgBouncer with `pooler`). */
  readonly databaseUrl: string;
  /** Superuser URL through HAProxy's write frontend (migrations, audit, tools). */
  readonly adminDatabaseUrl: string;
  readonly bankUrl: string;
  readonly redisSeeds: string;
  readonly redis: RedisCluster;
  readonly webhookSecret: string;
  readonly authSecret: string;
  readonly nodes: readonly PgNode[];
  readonly haproxyStatsUrl: string;
  readonly superuserPassword: string;
  readonly pgbackrestConfig: string | null;
  /** The node whose Patroni API says it is the primary now, or null during a failover. */
  primary(): Promise<PgNode | null>;
  /** SIGKILLs Patroni and the postmaster of `node` (the loss of a whole node, docs/development.md note 26). */
  killNode(node: PgNode): Promise<void>;
  /** Starts Patroni on `node` again (it rejoins as a replica, rewinding if needed). */
  restartNode(node: PgNode): Promise<void>;
  /** SIGKILLs app instance `index` (its whole process group). */
  killApp(index: number): Promise<void>;
  /** Starts app instance `index` again and waits for its liveness route. */
  restartApp(index: number): Promise<void>;
  /** Stops the reconciler process. */
  stopReconciler(): Promise<void>;
  /** Process group ids of the running app instances (for CPU accounting). */
  appGroups(): number[];
  /** Environment for an app instance or a tool (the same settings the instances run with). */
  appEnvironment(port: number): Record<string, string>;
  /** Stops everything, newest first, by PID; deletes the data unless `keepData`. Safe to call twice. */
  stop(options?: { keepData?: boolean }): Promise<void>;
}

/**
 * How long each start step may take. 60 s: etcd, HAProxy and Redis are ready in well under a second; a Patroni
 * replica clones the primary with pg_basebackup in a few seconds; a loaded 2-core machine gets ample room.
 */
const READY_TIMEOUT_MS = 60_000;
/** A Patroni bootstrap (initdb, start, promote) takes ~5 s here; 120 s before giving up. */
const BOOTSTRAP_TIMEOUT_MS = 120_000;

function postgresIds(): { uid: number; gid: number } {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("postgres:"));
  if (!line) throw new Error("there is no postgres user: install postgresql-15 (`apt-get install -y postgresql-15`)");
  const fields = line.split(":");
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

/** Runs `command` as `postgres` when we are root (setpriv keeps the PID, unlike runuser). */
function asPostgres(command: string, args: string[]): { command: string; args: string[] } {
  if (userInfo().uid !== 0) return { command, args };
  return { command: "setpriv", args: ["--reuid=postgres", "--regid=postgres", "--init-groups", command, ...args] };
}

function yamlString(value: string): string {
  return JSON.stringify(value);
}

/**
 * Starts the whole topology. Returns once HAProxy routes writes to a primary with a synchronous standby, the Redis
 * Cluster is healthy, the schema is migrated and every app instance answers its liveness route. Throws (after
 * stopping what it started) when a step fails; the message names the service and ends with its output.
 */
export async function startHaCluster(options: HaClusterOptions): Promise<HaCluster> {
  const missing = missingClusterPackages({ pooler: options.pooler, backups: options.backups });
  if (missing.length > 0) {
    throw new Error(
      `missing apt packages: ${missing.join(" ")} (install with: apt-get install -y ${missing.join(" ")})`,
    );
  }
  const logDir = options.logDir;
  // A fresh folder per run: the services append to their logs, and an old run's lines would read as this one's.
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  const root = join(tmpdir(), `wallet-cluster-${process.pid}-${randomBytes(3).toString("hex")}`);
  mkdirSync(root, { recursive: true });
  chmodSync(root, 0o755);
  const ids = userInfo().uid === 0 ? postgresIds() : null;
  const own = (path: string) => {
    if (ids) chownSync(path, ids.uid, ids.gid);
  };
  // Patroni writes its pgpass files and creates the data folders here, as `postgres`.
  own(root);

  const services: Service[] = [];
  const patronis = new Map<string, Service>();
  const apps: (Service | null)[] = [];
  let reconciler: Service | null = null;
  let redis: RedisCluster | null = null;
  let bouncer: PgBouncer | null = null;
  let stopped: Promise<void> | null = null;
  const stop = (stopOptions: { keepData?: boolean } = {}) =>
    (stopped ??= (async () => {
      await reconciler?.stop();
      await Promise.all(apps.map((app) => app?.stop()));
      await bouncer?.stop();
      // Patroni first (it stops its PostgreSQL), then the rest.
      await Promise.all([...patronis.values()].map((service) => service.stop()));
      await Promise.all([...services].reverse().map((service) => service.stop()));
      await redis?.stop();
      // A postmaster whose Patroni was SIGKILLed keeps running: stop any left on our data folders.
      for (const name of ["pg1", "pg2", "pg3"]) stopPostmaster(join(root, name));
      if (!stopOptions.keepData) rmSync(root, { recursive: true, force: true });
    })());

  try {
    const superuserPassword = randomBytes(12).toString("hex");
    const replicationPassword = randomBytes(12).toString("hex");
    const appPassword = randomBytes(12).toString("hex");
    const webhookSecret = randomBytes(32).toString("hex");
    const authSecret = randomBytes(32).toString("hex");

    // etcd: one member, v3 API (Patroni's etcd3 store).
    const [etcdClientPort, etcdPeerPort] = await Promise.all([freePort(), freePort()]);
    const etcdDir = join(root, "etcd");
    mkdirSync(etcdDir, { recursive: true });
    services.push(
      spawnService({
        name: "etcd",
        command: "/usr/bin/etcd",
        args: [
          "--name",
          "e1",
          "--data-dir",
          etcdDir,
          "--listen-client-urls",
          `http://127.0.0.1:${etcdClientPort}`,
          "--advertise-client-urls",
          `http://127.0.0.1:${etcdClientPort}`,
          "--listen-peer-urls",
          `http://127.0.0.1:${etcdPeerPort}`,
          "--initial-advertise-peer-urls",
          `http://127.0.0.1:${etcdPeerPort}`,
          "--initial-cluster",
          `e1=http://127.0.0.1:${etcdPeerPort}`,
          "--listen-metrics-urls",
          "",
        ],
        log: join(logDir, "etcd.log"),
      }),
    );
    await waitForHttp(`http://127.0.0.1:${etcdClientPort}/health`, READY_TIMEOUT_MS);

    // pgBackRest: one repository in the cluster's folder; every node archives its WAL there.
    let pgbackrestConfig: string | null = null;
    const repoDir = join(root, "backrest");
    if (options.backups) {
      mkdirSync(repoDir, { recursive: true });
      own(repoDir);
    }

    const nodes: PgNode[] = [];
    for (const name of ["pg1", "pg2", "pg3"]) {
      const [port, apiPort] = await Promise.all([freePort(), freePort()]);
      nodes.push({ name, port, apiPort, dataDir: join(root, name) });
    }
    const socketDir = join(root, "sockets");
    mkdirSync(socketDir, { recursive: true });
    own(socketDir);
    const ttlS = options.patroniTtlS ?? 20;
    for (const node of nodes) {
      const nodeConf = join(root, `${node.name}.pgbackrest.conf`);
      if (options.backups) {
        writeFileSync(
          nodeConf,
          pgbackrestConf({ repoDir, dataDir: node.dataDir, port: node.port, socketDir, logDir: repoDir }),
        );
        own(nodeConf);
        pgbackrestConfig ??= nodeConf;
      }
      const config = join(root, `${node.name}.yml`);
      writeFileSync(
        config,
        patroniConfig({
          node,
          nodes,
          etcdClientPort,
          ttlS,
          socketDir,
          superuserPassword,
          replicationPassword,
          pgpass: join(root, `${node.name}.pgpass`),
          archiveCommand: options.backups ? `pgbackrest --config=${nodeConf} --stanza=wallet archive-push %p` : null,
        }),
      );
      own(config);
    }
    const startPatroni = (node: PgNode) => {
      const { command, args } = asPostgres("/usr/bin/patroni", [join(root, `${node.name}.yml`)]);
      const service = spawnService({
        name: `patroni-${node.name}`,
        command,
        args,
        log: join(logDir, `${node.name}.log`),
      });
      patronis.set(node.name, service);
      return service;
    };
    // The first node bootstraps the cluster; the others clone it once it leads (fewer races on 2 cores).
    const first = startPatroni(nodes[0]!);
    await waitForPrimary(nodes, BOOTSTRAP_TIMEOUT_MS, () => {
      const exit = first.exitStatus();
      return exit
        ? `patroni-pg1 exited (${exit.code}):\n${first.recentOutput().split("\n").slice(-15).join("\n")}`
        : null;
    });
    for (const node of nodes.slice(1)) startPatroni(node);
    await waitForStreamingReplicas(nodes, 2, BOOTSTRAP_TIMEOUT_MS);

    // HAProxy: PostgreSQL writes by Patroni's health API, the app by its liveness route.
    const [pgWritePort, appPort, statsPort] = await Promise.all([
      options.pgWritePort ?? freePort(),
      options.appPort ?? freePort(),
      freePort(),
    ]);
    const appInstances = options.appInstances ?? 3;
    const instancePorts = await Promise.all(Array.from({ length: appInstances }, () => freePort()));
    const haproxyConfig = join(root, "haproxy.cfg");
    writeFileSync(haproxyConfig, haproxyCfg({ nodes, pgWritePort, appPort, statsPort, instancePorts }));
    services.push(
      spawnService({
        name: "haproxy",
        command: "/usr/sbin/haproxy",
        args: ["-f", haproxyConfig, "-db"],
        log: join(logDir, "haproxy.log"),
      }),
    );
    // HAProxy starts with every server up until its checks say otherwise: until the replicas are marked down, a
    // connection to the write port may reach one, where the database just created may not exist yet.
    await waitForOneWriteServer(`http://127.0.0.1:${statsPort}/`, READY_TIMEOUT_MS);
    const adminDatabaseUrl = `postgres://postgres:${superuserPassword}@127.0.0.1:${pgWritePort}/${DATABASE}`;
    await createDatabaseAndRole({
      url: `postgres://postgres:${superuserPassword}@127.0.0.1:${pgWritePort}/postgres`,
      appPassword,
      pooler: options.pooler ?? false,
    });
    await migrate(adminDatabaseUrl);
    // The app's role owns nothing but may use everything the migrations made.
    await withClient(adminDatabaseUrl, (client) =>
      client.query(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${APP_ROLE};
         GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${APP_ROLE};`,
      ),
    );
    if (options.backups && pgbackrestConfig) {
      const primary = (await currentPrimary(nodes))!;
      runPgBackRest(join(root, `${primary.name}.pgbackrest.conf`), ["stanza-create"]);
      pgbackrestConfig = join(root, `${primary.name}.pgbackrest.conf`);
    }

    // Through HAProxy to the primary: the pool's URL without a pooler, and always the live-status listener's
    // (LISTEN needs a session of its own, which transaction pooling does not keep).
    const directUrl = `postgres://${APP_ROLE}:${appPassword}@127.0.0.1:${pgWritePort}/${DATABASE}`;
    let databaseUrl = directUrl;
    if (options.pooler) {
      if (!pgbouncerInstalled()) throw new Error("pgbouncer is not installed: apt-get install -y pgbouncer");
      bouncer = await startPgBouncer({
        serverHost: "127.0.0.1",
        serverPort: pgWritePort,
        database: DATABASE,
        user: APP_ROLE,
        password: appPassword,
        poolMode: "transaction",
        // 40 server connections for 3 instances of 20 clients: transactions are a few ms, so 40 keep the
        // two cores busy while each instance's pool queues in PgBouncer instead of in PostgreSQL.
        poolSize: 40,
        log: join(logDir, "pgbouncer.log"),
      });
      databaseUrl = bouncer.url;
    }

    redis = await startRedisCluster({ masters: 3, replicasPerMaster: 1, logDir, readyTimeoutMs: READY_TIMEOUT_MS });

    const bankPort = await freePort();
    const bankUrl = `http://127.0.0.1:${bankPort}`;
    const appUrl = `http://127.0.0.1:${appPort}`;
    const bank = spawnBank({
      env: {
        ...childEnvironment(),
        BANK_PORT: String(bankPort),
        APP_URL: appUrl,
        BANK_WEBHOOK_SECRETS: webhookSecret,
        BANK_STATE_FILE: join(root, "bank-state.json"),
        ...options.bankEnv,
      },
      log: join(logDir, "bank.log"),
    });
    services.push(bank);
    await waitForHttp(`${bankUrl}/health`, READY_TIMEOUT_MS);

    const redisSeeds = redis.seeds;
    const appEnvironment = (port: number): Record<string, string> => ({
      ...childEnvironment(),
      DATABASE_URL: databaseUrl,
      DATABASE_LISTEN_URL: directUrl,
      DB_POOLER: options.pooler ? "transaction" : "none",
      REDIS_CLUSTER_NODES: redisSeeds,
      PORT: String(port),
      BANK_URL: bankUrl,
      // The bank's webhooks and better-auth's origin: the balancer, never one instance.
      APP_URL: appUrl,
      BETTER_AUTH_URL: appUrl,
      BANK_WEBHOOK_SECRETS: webhookSecret,
      BETTER_AUTH_SECRET: authSecret,
      // The cluster storm checks money; its receipts stay queued in the outbox (docs/decisions/054-mail-outbox.md).
      MAIL_DELIVERY: "off",
      // The reconciler runs as its own process (below), not inside every instance.
      RECONCILE_INTERVAL_MS: "0",
      ...options.appEnv,
    });
    const startApp = (index: number) => {
      const port = instancePorts[index]!;
      const app = spawnApp({
        name: `app${index + 1}`,
        port,
        env: appEnvironment(port),
        log: join(logDir, `app${index + 1}.log`),
      });
      apps[index] = app;
      return app;
    };
    for (let index = 0; index < appInstances; index++) startApp(index);
    await Promise.all(
      instancePorts.map((port) => waitForHttp(`http://127.0.0.1:${port}/api/v1/health/live`, READY_TIMEOUT_MS)),
    );
    if (appInstances > 0) await waitForHttp(`${appUrl}/api/v1/health`, READY_TIMEOUT_MS);

    if (options.reconciler ?? true) {
      reconciler = spawnService({
        name: "reconciler",
        command: process.execPath,
        args: ["--import", "tsx", "scripts/reconcile.ts", "--watch"],
        cwd: projectRoot,
        env: reconcilerEnvironment(appEnvironment(instancePorts[0] ?? appPort)),
        log: join(logDir, "reconciler.log"),
      });
    }

    return {
      root,
      appUrl,
      instanceUrls: instancePorts.map((port) => `http://127.0.0.1:${port}`),
      databaseUrl,
      adminDatabaseUrl,
      bankUrl,
      redisSeeds,
      redis,
      webhookSecret,
      authSecret,
      nodes,
      haproxyStatsUrl: `http://127.0.0.1:${statsPort}/`,
      superuserPassword,
      pgbackrestConfig,
      primary: () => currentPrimary(nodes),
      async killNode(node) {
        const patroni = patronis.get(node.name);
        const postmaster = readPostmasterPid(node.dataDir);
        if (patroni) signalGroup(patroni.pid, "SIGKILL");
        if (postmaster !== null) {
          try {
            // The postmaster's children go with it: SIGKILL of the postmaster makes them exit at once.
            process.kill(postmaster, "SIGKILL");
          } catch {
            // Already gone.
          }
        }
        await patroni?.stop();
        patronis.delete(node.name);
      },
      async restartNode(node) {
        // A SIGKILLed postmaster leaves children that exit on their own within a moment.
        await sleep(500);
        startPatroni(node);
      },
      async killApp(index) {
        const app = apps[index];
        if (!app) return;
        signalGroup(app.pid, "SIGKILL");
        await app.exited;
        await app.stop();
        apps[index] = null;
      },
      async restartApp(index) {
        startApp(index);
        await waitForHttp(`http://127.0.0.1:${instancePorts[index]}/api/v1/health/live`, READY_TIMEOUT_MS);
      },
      async stopReconciler() {
        await reconciler?.stop();
      },
      appGroups: () => apps.filter((app): app is Service => app !== null).map((app) => app.pid),
      appEnvironment,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The reconciler's environment: the app's, with a pass every 2 s (several passes per fault, each finding the rows
 * whose lease just expired) and no PORT of its own.
 */
function reconcilerEnvironment(app: Record<string, string>): Record<string, string> {
  const environment: Record<string, string> = { ...app, NODE_ENV: "production", RECONCILE_INTERVAL_MS: "2000" };
  delete environment.PORT;
  return environment;
}

function patroniConfig(input: {
  node: PgNode;
  nodes: readonly PgNode[];
  etcdClientPort: number;
  ttlS: number;
  socketDir: string;
  superuserPassword: string;
  replicationPassword: string;
  pgpass: string;
  archiveCommand: string | null;
}): string {
  const { node } = input;
  // loop_wait 1 s and retry_timeout ttl/2: a lost leader is noticed within the TTL and replaced at once.
  return `scope: wallet
namespace: /wallet/
name: ${node.name}
restapi:
  listen: 127.0.0.1:${node.apiPort}
  connect_address: 127.0.0.1:${node.apiPort}
etcd3:
  hosts: 127.0.0.1:${input.etcdClientPort}
bootstrap:
  dcs:
    ttl: ${input.ttlS}
    loop_wait: 1
    retry_timeout: ${Math.max(2, Math.floor(input.ttlS / 2))}
    maximum_lag_on_failover: 1048576
    # Strict synchronous replication: a commit is acknowledged only once a standby has it, and with no standby
    # left writes stop rather than go unreplicated (docs/development.md note 26: without strict, a new primary ran 5-7 s
    # alone).
    synchronous_mode: true
    synchronous_mode_strict: true
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 200
        archive_mode: "${input.archiveCommand ? "on" : "off"}"
        archive_command: ${yamlString(input.archiveCommand ?? "/bin/true")}
        archive_timeout: 10
  initdb:
    - encoding: UTF8
    - locale: C
    - data-checksums
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
postgresql:
  listen: 127.0.0.1:${node.port}
  connect_address: 127.0.0.1:${node.port}
  data_dir: ${node.dataDir}
  bin_dir: ${PG15_BIN}
  pgpass: ${input.pgpass}
  authentication:
    superuser:
      username: postgres
      password: ${yamlString(input.superuserPassword)}
    replication:
      username: replicator
      password: ${yamlString(input.replicationPassword)}
    rewind:
      username: postgres
      password: ${yamlString(input.superuserPassword)}
  parameters:
    unix_socket_directories: ${yamlString(input.socketDir)}
    password_encryption: scram-sha-256
tags:
  nofailover: false
  noloadbalance: false
`;
}

function pgbackrestConf(input: {
  repoDir: string;
  dataDir: string;
  port: number;
  socketDir: string;
  logDir: string;
}): string {
  return `[global]
repo1-path=${input.repoDir}
repo1-retention-full=2
log-path=${input.logDir}
log-level-console=warn
log-level-file=info
lock-path=${input.repoDir}/lock
start-fast=y
archive-async=n

[wallet]
pg1-path=${input.dataDir}
pg1-port=${input.port}
pg1-socket-path=${input.socketDir}
pg1-user=postgres
`;
}

/** Runs `pgbackrest --config=<config> --stanza=wallet <args>` as postgres; throws with its output on failure. */
export function runPgBackRest(config: string, args: string[]): string {
  const { command, args: full } = asPostgres("/usr/bin/pgbackrest", [`--config=${config}`, "--stanza=wallet", ...args]);
  const result = spawnSync(command, full, { encoding: "utf8", timeout: 600_000 });
  if (result.status !== 0) {
    throw new Error(`pgbackrest ${args.join(" ")} failed (${result.status}): ${result.stdout}\n${result.stderr}`);
  }
  return result.stdout;
}

function haproxyCfg(input: {
  nodes: readonly PgNode[];
  pgWritePort: number;
  appPort: number;
  statsPort: number;
  instancePorts: readonly number[];
}): string {
  const pgServers = input.nodes
    .map((node) => `    server ${node.name} 127.0.0.1:${node.port} check port ${node.apiPort}`)
    .join("\n");
  const appServers = input.instancePorts
    .map((port, index) => `    server app${index + 1} 127.0.0.1:${port} check`)
    .join("\n");
  return `global
    maxconn 4000

defaults
    log stdout format raw local0 warning
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout check 2s

listen stats
    mode http
    bind 127.0.0.1:${input.statsPort}
    stats enable
    stats uri /

# Writes go to the node whose Patroni API answers 200 on GET /primary (docs/development.md note 26). Checked every
# second; a node marked down has its sessions shut, so clients reconnect to the new primary instead of waiting.
listen postgres_write
    mode tcp
    bind 127.0.0.1:${input.pgWritePort}
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
${pgServers}

# The app: checked on its liveness route, which touches no database, so a database failover does not take every
# instance out at once. A dead instance refuses the check's connection at once and is out after 3 checks (~3 s);
# a busy one gets 5 s to answer (measured: under the cluster storm on 2 cores a live instance took over 2 s, and a
# 2 s check timeout took all three out together, answering 503 to everyone). Connection failures are retried on
# another instance, but a POST is never replayed by the balancer (docs/development.md note 29): clients retry with their
# key.
listen app
    mode http
    bind 127.0.0.1:${input.appPort}
    balance roundrobin
    option httpchk GET /api/v1/health/live
    http-check expect status 200
    timeout check 5s
    default-server inter 1s fall 3 rise 1
    retries 3
    option redispatch
    retry-on conn-failure empty-response response-timeout
    http-request disable-l7-retry if METH_POST
${appServers}
`;
}

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Creates the `wallet` database and the app's role with its timeouts as role settings: behind a transaction pooler
 * startup options are refused, and autocommit statements get only what the role carries (docs/development.md note 27).
 * Retries while HAProxy has not yet marked the primary up (bounded by READY_TIMEOUT_MS).
 */
async function createDatabaseAndRole(input: { url: string; appPassword: string; pooler: boolean }): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    try {
      await withClient(input.url, async (client) => {
        const role = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [APP_ROLE]);
        if (role.rowCount === 0) {
          await client.query(`CREATE ROLE ${APP_ROLE} LOGIN PASSWORD '${input.appPassword}'`);
        }
        // DB_STATEMENT_TIMEOUT_MS and DB_IDLE_IN_TRANSACTION_TIMEOUT_MS defaults (lib/env.ts).
        await client.query(`ALTER ROLE ${APP_ROLE} SET statement_timeout = '15s'`);
        await client.query(`ALTER ROLE ${APP_ROLE} SET idle_in_transaction_session_timeout = '10s'`);
        const database = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [DATABASE]);
        if (database.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE} OWNER postgres`);
        await client.query(`GRANT CONNECT, TEMPORARY ON DATABASE ${DATABASE} TO ${APP_ROLE}`);
      });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(500);
    }
  }
}

interface PatroniClusterView {
  members: { name: string; role: string; state: string; lag?: number | string }[];
}

async function patroniJson(apiPort: number, path: string): Promise<{ status: number; body: unknown } | null> {
  try {
    const response = await fetch(`http://127.0.0.1:${apiPort}${path}`, { signal: AbortSignal.timeout(2000) });
    const body = (await response.json().catch(() => null)) as unknown;
    return { status: response.status, body };
  } catch {
    return null;
  }
}

async function currentPrimary(nodes: readonly PgNode[]): Promise<PgNode | null> {
  for (const node of nodes) {
    const answer = await patroniJson(node.apiPort, "/primary");
    if (answer?.status === 200) return node;
  }
  return null;
}

async function waitForPrimary(
  nodes: readonly PgNode[],
  timeoutMs: number,
  failIf: () => string | null = () => null,
): Promise<PgNode> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const primary = await currentPrimary(nodes);
    if (primary) return primary;
    const failure = failIf();
    if (failure) throw new Error(failure);
    if (Date.now() > deadline) throw new Error(`no Patroni primary after ${timeoutMs} ms (see the pg*.log files)`);
    await sleep(500);
  }
}

/** Waits until `count` replicas stream from the primary and one of them is the synchronous standby. */
/**
 * Waits until HAProxy's `postgres_write` proxy has exactly one server up (the primary: its check is Patroni's
 * `GET /primary`), read from the stats page's CSV at `statsUrl`. HAProxy 2.6 (Debian 12) has no way to start a
 * server down, so until the replicas' first failed checks (fall 2, every second) the write port balances over all
 * three. Throws after `timeoutMs` naming what the page last said.
 */
async function waitForOneWriteServer(statsUrl: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  for (;;) {
    try {
      const text = await (await fetch(`${statsUrl};csv`, { signal: AbortSignal.timeout(2000) })).text();
      const [header, ...rows] = text.split("\n").filter((line) => line.length > 0);
      const columns = (header ?? "").replace(/^# /, "").split(",");
      const [proxy, server, status] = ["pxname", "svname", "status"].map((name) => columns.indexOf(name));
      const servers = rows
        .map((row) => row.split(","))
        .filter((cells) => cells[proxy!] === "postgres_write" && !["FRONTEND", "BACKEND"].includes(cells[server!]!));
      last = servers.map((cells) => `${cells[server!]}:${cells[status!]}`).join(", ");
      if (servers.filter((cells) => cells[status!]?.startsWith("UP")).length === 1) return;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() > deadline) throw new Error(`HAProxy's write port has not settled on one server: ${last}`);
    await sleep(250);
  }
}

async function waitForStreamingReplicas(nodes: readonly PgNode[], count: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  for (;;) {
    for (const node of nodes) {
      const answer = await patroniJson(node.apiPort, "/cluster");
      const view = answer?.body as PatroniClusterView | null;
      if (!view?.members) continue;
      const streaming = view.members.filter(
        (member) => member.role !== "leader" && (member.state === "streaming" || member.state === "running"),
      );
      const synchronous = view.members.some((member) => member.role === "sync_standby");
      last = view.members.map((member) => `${member.name}:${member.role}/${member.state}`).join(", ");
      if (streaming.length >= count && synchronous) return;
      break;
    }
    if (Date.now() > deadline) throw new Error(`replicas not streaming after ${timeoutMs} ms: ${last}`);
    await sleep(500);
  }
}

function readPostmasterPid(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** SIGQUITs (immediate shutdown) a postmaster still running on `dataDir`, when its cmdline names that folder. */
function stopPostmaster(dataDir: string): void {
  const pid = readPostmasterPid(dataDir);
  if (pid === null) return;
  try {
    const commandLine = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    if (!commandLine.includes(dataDir)) return;
    process.kill(pid, "SIGQUIT");
  } catch {
    // Not running.
  }
}
