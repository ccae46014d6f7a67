/**
 * `npm run db:migrate`: applies pending SQL migrations, then the changed function files (lib/migrate.ts,
 * docs/decisions/052), to the database found the CLI way (contract section 4): `DATABASE_URL`, else the running
 * demo's `.data/runtime.json`, else exit 2.
 *
 * Prints one line per applied migration and function file and a summary. Exit codes: 0 applied or nothing to do;
 * 1 a migration or function file failed, or the files disagree with the database; 2 no database (none configured, or
 * it cannot be reached).
 */
import { env } from "../lib/env";
import { migrate } from "../lib/migrate";
import { resolveCliEnvironment } from "./lib/runtime-file";
import { exitWithHelpIfAsked } from "./lib/cli-help";

/** pg / Node error codes that mean "there is no database to talk to" rather than "the migration is wrong". */
const NO_DATABASE_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ETIMEDOUT",
  "ECONNRESET",
  "3D000", // invalid_catalog_name: the database does not exist
  "28P01", // invalid_password
  "28000", // invalid_authorization_specification
  "57P03", // cannot_connect_now: the server is starting or shutting down
]);

const HELP = `usage: npm run db:migrate

Applies the pending SQL migrations (prisma/migrations), then the function files that changed (prisma/functions),
to the database in DATABASE_URL, else to the running demo's (.data/runtime.json). Prints one line per applied
migration and function file and a summary.
Exit codes: 0 applied or nothing to do; 1 a migration or function file failed, or the files disagree with the
database; 2 no database (none configured, or it cannot be reached).`;

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  resolveCliEnvironment();
  const databaseUrl = env().DATABASE_URL;
  if (!databaseUrl) {
    process.stderr.write("no database: set DATABASE_URL or start the demo\n");
    return 2;
  }
  try {
    const { applied, skipped, functionsApplied, functionsSkipped } = await migrate(databaseUrl, {
      log: (line) => process.stdout.write(`${line}\n`),
    });
    process.stdout.write(`function files: ${functionsApplied.length} applied, ${functionsSkipped.length} unchanged\n`);
    // The last line stays the migrations' summary, which tests/integration/cli-exit.test.ts reads.
    process.stdout.write(`${applied.length} applied, ${skipped.length} already applied\n`);
    return 0;
  } catch (error) {
    const code = (error as { code?: string }).code;
    const message = error instanceof Error ? error.message : String(error);
    if (code && NO_DATABASE_CODES.has(code)) {
      process.stderr.write(`no database: cannot reach it (${code}: ${message})\n`);
      return 2;
    }
    // Connection timeouts from pg come without a code.
    const ranAndFailed = message.startsWith("migration ") || message.startsWith("function file");
    if (/timeout expired|Connection terminated/i.test(message) && !ranAndFailed) {
      process.stderr.write(`no database: cannot reach it (${message})\n`);
      return 2;
    }
    process.stderr.write(`migration failed: ${message}\n`);
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`migration failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
