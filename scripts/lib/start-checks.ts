/**
 * What `npm start` checks before it starts the server, so that a misconfigured deployment refuses to
 * start with the whole list of what is wrong instead of serving errors, or worse, serving against a schema it was
 * not built for.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { EnvError, mailProblems, parseEnv, secretProblems, type Env } from "../../lib/env";
import { checkMigrations, migrate, MigrationMismatchError } from "../../lib/migrate";
import { buildStaleReason } from "./stack";

export interface StartCheckResult {
  /** Each a sentence naming the setting, file or migration and what to do; any one refuses the start. */
  problems: string[];
  /** Worth saying, not worth refusing: the server runs, with less (e.g. rewards off without Redis). */
  warnings: string[];
}

export interface StartCheckOptions {
  /**
   * Apply pending migrations and changed function files first (`npm start -- --migrate`), with lib/migrate.ts's lock
   * and checksums.
   */
  migrate: boolean;
  /** The project folder holding `.next` (the build). */
  root: string;
  /** Progress lines (e.g. each migration applied). */
  log: (line: string) => void;
}

/**
 * Checks, in order and without stopping at the first failure:
 * 1. the settings (`parseEnv()` over `process.env`, every invalid variable), and `DATABASE_URL`, which `npm start`
 *    requires since it embeds nothing;
 * 2. the secrets (contract section 9, case C16) and the mail server (docs/decisions/054): lib/env.ts `secretProblems`
 *    and `mailProblems`, the rules the server itself applies at start (instrumentation.ts), so this refuses exactly
 *    what the server would, only earlier and in one list;
 * 3. the build: `.next/BUILD_ID` exists (a build older than its sources is a warning);
 * 4. the database: reachable, every migration on disk applied with its recorded checksum, and every function file
 *    of prisma/functions applied as it now is (lib/migrate.ts `checkMigrations`, docs/decisions/052); with
 *    `options.migrate`, pending ones are applied first, but only when checks 1-3 passed;
 * 5. Redis: configured and answering, else a warning (rewards answer 503 meanwhile, contract section 6).
 *
 * Returns `{ problems, warnings }`; never throws for a failed check (a connection error is a problem naming the
 * server), only for bugs.
 */
export async function checkBeforeStart(options: StartCheckOptions): Promise<StartCheckResult> {
  const problems: string[] = [];
  const warnings: string[] = [];

  let settings: Env | null = null;
  try {
    settings = parseEnv();
  } catch (error) {
    if (!(error instanceof EnvError)) throw error;
    problems.push(...error.problems.map((problem) => `${problem} (see .env.example)`));
  }
  // With another setting invalid the database can still be checked, so that the list is complete.
  const databaseUrl = settings ? settings.DATABASE_URL : databaseUrlAlone();
  if (settings && !databaseUrl) {
    problems.push("DATABASE_URL is missing: set it to the PostgreSQL database this server uses (nothing is embedded)");
  }
  if (settings?.ERROR_DRILL === "1") {
    problems.push("ERROR_DRILL=1 makes the page /error-drill throw: it is for the test stack only; unset it");
  }
  // The same rules the server applies when it starts (instrumentation.ts), asked here so they join the list; npm start
  // always runs the production server, whatever NODE_ENV the shell has.
  problems.push(...secretProblems(), ...mailProblems({ ...process.env, NODE_ENV: "production" }));

  if (!existsSync(join(options.root, ".next", "BUILD_ID"))) {
    problems.push("build: no production build in .next: run `npm run build` first");
  } else {
    const stale = buildStaleReason(options.root);
    if (stale)
      warnings.push(`the build may be out of date (${stale}): run \`npm run build\` to serve the current code`);
  }

  if (databaseUrl) {
    // Migrating changes the schema under whatever server runs now: only for a start that can then go ahead.
    const migrateNow = options.migrate && problems.length === 0;
    if (options.migrate && !migrateNow) options.log("--migrate: not migrating until the problems below are fixed");
    problems.push(...(await checkDatabase(databaseUrl, { ...options, migrate: migrateNow })));
  }
  if (settings) warnings.push(...(await checkRedis()));
  return { problems, warnings };
}

/** `DATABASE_URL` validated on its own (when other settings are invalid); undefined when unset or invalid. */
function databaseUrlAlone(): string | undefined {
  try {
    return parseEnv({ DATABASE_URL: process.env.DATABASE_URL }).DATABASE_URL;
  } catch {
    return undefined;
  }
}

/** Problems of the database at `databaseUrl`: unreachable, migrations pending or changed, function files pending. */
async function checkDatabase(databaseUrl: string, options: StartCheckOptions): Promise<string[]> {
  const where = describeServer(databaseUrl);
  try {
    if (options.migrate) {
      const { applied, functionsApplied } = await migrate(databaseUrl, { log: options.log });
      options.log(
        `database ${where}: ${applied.length} migration(s) and ${functionsApplied.length} function file(s) applied`,
      );
    }
    const status = await checkMigrations(databaseUrl);
    const problems = status.mismatches.map((mismatch) => `database ${where}: ${mismatch}`);
    if (status.pending.length > 0) {
      problems.push(
        `database ${where}: ${status.pending.length} migration(s) not applied: ${status.pending.join(", ")} ` +
          "(apply them with `npm run db:migrate`, or start with `npm start -- --migrate`)",
      );
    }
    if (status.functionsPending.length > 0) {
      problems.push(
        `database ${where}: ${status.functionsPending.length} function file(s) of prisma/functions not applied as ` +
          `they now are: ${status.functionsPending.join(", ")} ` +
          "(apply them with `npm run db:migrate`, or start with `npm start -- --migrate`)",
      );
    }
    return problems;
  } catch (error) {
    if (error instanceof MigrationMismatchError)
      return error.problems.map((problem) => `database ${where}: ${problem}`);
    const code = (error as { code?: string }).code;
    const message = error instanceof Error ? error.message : String(error);
    return [`database ${where}: cannot use it (${code ? `${code}: ` : ""}${message}): check DATABASE_URL`];
  }
}

/** Warnings about Redis: not configured, or not answering (the app runs without it, rewards answer 503). */
async function checkRedis(): Promise<string[]> {
  const { closeRedis, ensureRedisConnected, redis } = await import("../../lib/redis");
  const client = redis();
  if (!client) {
    return [
      "neither REDIS_URL nor REDIS_CLUSTER_NODES is set: rewards answer 503 cap_store_unavailable " +
        "(top-ups and payments work)",
    ];
  }
  try {
    await ensureRedisConnected(client);
    await client.ping();
    return [];
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return [`Redis does not answer (${message}): rewards answer 503 cap_store_unavailable until it does`];
  } finally {
    await closeRedis();
  }
}

/** `host:port/database` of a connection URL: enough to say which server, without the password. */
function describeServer(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.hostname}:${url.port || "5432"}${url.pathname}`;
  } catch {
    return "(DATABASE_URL)";
  }
}
