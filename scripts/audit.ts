/**
 * `npm run audit [-- --user <id> ...]`: checks every invariant of contract section 7 (lib/audit/run-audit.ts) and
 * prints the report `{ ok, checks: [{ name, ok, violations }] }` as JSON on stdout (one line per check on stderr
 * for people). `--user` (repeatable) limits the ledger checks to those users and their charges.
 *
 * Finds the database and the bank through DATABASE_URL/BANK_URL or a running demo's `.data/runtime.json`
 * (resolveCliEnvironment).
 *
 * Exit codes (contract section 4): 0 every invariant holds; 1 at least one violation (an unreachable bank is a
 * failed check, so also 1); 2 the audit cannot run (no running demo, bad arguments, database unreachable).
 */
import { parseArgs } from "node:util";
import { exitWithHelpIfAsked } from "./lib/cli-help";
import { resolveCliEnvironment } from "./lib/runtime-file";
import { closeCliClients } from "./lib/close-cli-clients";
import { runAudit } from "../lib/audit/run-audit";

const EXIT_ALL_HOLD = 0;
const EXIT_VIOLATION = 1;
const EXIT_CANNOT_RUN = 2;

const USAGE = "usage: npm run audit [-- --user <id> ...]";

const HELP = `${USAGE}

Checks every invariant of the wallet (balances equal their ledgers, no operation twice, top-ups match the bank's
charges, rewards within the daily cap, stored answers replay, no unfinished row with an expired lease, the books
balanced and equal to the wallets and the bank). Prints
the report as JSON on stdout and one line per check on stderr.
  --user <id>        only these users and their charges (repeatable)

Finds the database and the bank through DATABASE_URL/BANK_URL or a running demo (.data/runtime.json).
Exit codes: 0 every invariant holds; 1 at least one violation (an unreachable bank included); 2 cannot run.`;

function say(message: string): void {
  process.stderr.write(`${message}\n`);
}

async function main(): Promise<number> {
  exitWithHelpIfAsked(HELP);
  let userIds: string[] | undefined;
  try {
    const parsed = parseArgs({
      args: process.argv.slice(2),
      strict: true,
      allowPositionals: false,
      options: { user: { type: "string", multiple: true } },
    });
    userIds = parsed.values.user;
  } catch (error) {
    say(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return EXIT_CANNOT_RUN;
  }
  // Exits with 2 and "no running demo" when neither DATABASE_URL nor .data/runtime.json exists.
  resolveCliEnvironment();

  const report = await runAudit({ userIds });
  for (const check of report.checks) {
    say(`${check.ok ? "ok  " : "FAIL"} ${check.name}${check.ok ? "" : `: ${check.violations.length} violation(s)`}`);
    for (const violation of check.violations) say(`       ${violation}`);
  }
  process.stdout.write(`${JSON.stringify(report)}\n`);
  return report.ok ? EXIT_ALL_HOLD : EXIT_VIOLATION;
}

main()
  .then(
    (code) => code,
    (error: unknown) => {
      const cause =
        error instanceof Error && error.cause instanceof Error ? `\n  caused by: ${error.cause.message}` : "";
      say(`audit cannot run: ${error instanceof Error ? error.message : String(error)}${cause}`);
      return EXIT_CANNOT_RUN;
    },
  )
  .then(async (code) => {
    // The reward-cap check reads Redis: close both clients so the process can end.
    await closeCliClients();
    process.exitCode = code;
  });
