/**
 * `npm run cluster`: the wallet on a production-shaped topology on 127.0.0.1 (scripts/lib/ha-cluster.ts):
 * three PostgreSQL 15 nodes under Patroni (etcd) with strict synchronous replication, HAProxy in front of them and
 * of three `next start` instances, a 6-node Redis Cluster, the sandbox bank and the reconciler. Installs nothing:
 * when an apt package is missing it names it and exits 2. Prints the endpoints and an admin's credentials, then
 * runs until Ctrl-C and stops everything by PID.
 *
 *   npm run cluster                    # serves the wallet through HAProxy on http://127.0.0.1:$PORT (3000)
 *   npm run cluster -- --pooler        # PgBouncer in transaction pooling between HAProxy and the app
 *   npm run cluster -- --restore-drill # backup, storm, point-in-time restore to a new node, app + audit on it
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { exitWithHelpIfAsked } from "./lib/cli-help";
import { registerCleanup, shutdownSignal } from "./lib/processes";
import { missingClusterPackages, startHaCluster } from "./lib/ha-cluster";
import { ensureBuilt, projectRoot } from "./lib/stack";

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_CANNOT_RUN = 2;

const USAGE = "usage: npm run cluster [-- --pooler] [-- --port N] [-- --restore-drill]";

const HELP = `${USAGE}

The wallet on a production-shaped topology on 127.0.0.1: three PostgreSQL 15 nodes under Patroni (etcd) with
synchronous replication, HAProxy in front of them and of three app instances, a 6-node Redis Cluster, the
sandbox bank and the reconciler. Installs nothing: a missing apt package is named (exit 2). Runs until Ctrl-C.
  --pooler           PgBouncer in transaction pooling between HAProxy and the app
  --port N           where HAProxy serves the wallet (default PORT, else 3000)
  --restore-drill    backup, storm, point-in-time restore to a new node, then the app and the audit on it
Exit codes: 0 stopped by Ctrl-C (or a drill that passed); 1 a failure; 2 cannot run.`;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  let values;
  try {
    ({ values } = parseArgs({
      args: process.argv.slice(2),
      strict: true,
      options: {
        pooler: { type: "boolean" },
        port: { type: "string" },
        "restore-drill": { type: "boolean" },
        help: { type: "boolean" },
      },
    }));
  } catch (error) {
    say(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return EXIT_CANNOT_RUN;
  }
  if (values["restore-drill"]) {
    const { runRestoreDrill } = await import("./cluster/restore-drill");
    return runRestoreDrill({ pooler: values.pooler ?? false });
  }
  const missing = missingClusterPackages({ pooler: values.pooler });
  if (missing.length > 0) {
    say(`npm run cluster needs apt packages that are missing: ${missing.join(" ")}`);
    say(`install them with: apt-get install -y ${missing.join(" ")}`);
    return EXIT_CANNOT_RUN;
  }
  const port = Number(values.port ?? process.env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    say(`--port must be a port number\n${USAGE}`);
    return EXIT_CANNOT_RUN;
  }

  say("building the app if its sources changed...");
  ensureBuilt();
  const logDir = join(projectRoot, "reports", "cluster-logs");
  say(
    `starting etcd, 3 x PostgreSQL 15 under Patroni, HAProxy${values.pooler ? ", PgBouncer" : ""}, a 6-node Redis Cluster, the bank, 3 app instances and the reconciler (logs: ${logDir})`,
  );
  const startedMs = Date.now();
  const cluster = await startHaCluster({
    appInstances: 3,
    pooler: values.pooler,
    appPort: port,
    logDir,
    patroniTtlS: 10,
  });
  const unregister = registerCleanup(() => cluster.stop());
  if (shutdownSignal()) return EXIT_FAILED;

  const email = "admin@cluster.local";
  const password = randomBytes(12).toString("base64url");
  process.env.DATABASE_URL = cluster.adminDatabaseUrl;
  process.env.BETTER_AUTH_SECRET = cluster.authSecret;
  process.env.BETTER_AUTH_URL = cluster.appUrl;
  const { createUser } = await import("../lib/users/create-user");
  const created = await createUser({ email, password, name: "Cluster admin", role: "admin" });
  if (created.kind !== "created") throw new Error("could not create the admin user");
  const primary = await cluster.primary();

  const lines = [
    "",
    `cluster ready in ${((Date.now() - startedMs) / 1000).toFixed(1)} s`,
    "",
    `  wallet (HAProxy)      ${cluster.appUrl}`,
    `  app instances         ${cluster.instanceUrls.join("  ")}`,
    `  HAProxy stats         ${cluster.haproxyStatsUrl}`,
    `  PostgreSQL (writes)   ${cluster.adminDatabaseUrl.replace(/:[^:@/]+@/, ":***@")} (superuser password below)`,
    `  app database URL      ${cluster.databaseUrl.replace(/:[^:@/]+@/, ":***@")}${values.pooler ? " (PgBouncer, transaction pooling)" : ""}`,
    `  PostgreSQL nodes      ${cluster.nodes.map((node) => `${node.name} 127.0.0.1:${node.port} (Patroni API :${node.apiPort})`).join(", ")}`,
    `  primary now           ${primary?.name ?? "electing"}`,
    `  Redis Cluster         ${cluster.redisSeeds}`,
    `  sandbox bank          ${cluster.bankUrl}`,
    "",
    `  admin                 ${email} / ${password}`,
    `  postgres superuser    ${cluster.superuserPassword}`,
    "",
    "Ctrl-C stops everything.",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
  await new Promise<void>(() => {
    // Runs until a signal: processes.ts runs the cleanups (cluster.stop) and exits.
  });
  unregister();
  return EXIT_OK;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    say(`npm run cluster failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exit(EXIT_FAILED);
  },
);
