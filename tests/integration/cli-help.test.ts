/**
 * `--help` on every command (scripts/lib/cli-help.ts): `npm run <command> -- --help` (and `-h`) prints the
 * command's usage on stdout and exits 0 before it reads a setting or connects to anything. Each command is run as
 * npm runs it (`node --import tsx <entry> --help`) with a database address nothing listens on: the same command
 * without `--help` fails on it (the negative control below), so a 0 proves the help answered first.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";

/** The project's commands: npm script, entry file, and the first words of its usage. */
const COMMANDS: [script: string, entry: string][] = [
  ["users", "scripts/users.ts"],
  ["reconcile", "scripts/reconcile.ts"],
  ["audit", "scripts/audit.ts"],
  ["db:migrate", "scripts/migrate.ts"],
  ["bank", "bank/main.ts"],
  ["bench", "bench/run.ts"],
  ["storm", "scripts/storm.ts"],
  ["cluster", "scripts/cluster.ts"],
  ["test", "scripts/test.ts"],
  ["start", "scripts/start.ts"],
  ["demo", "scripts/demo.ts"],
  ["dev", "scripts/dev.ts"],
];

/** An address where nothing listens (port 9 is "discard", closed on these machines). */
const NOWHERE = "postgres://nobody:nothing@127.0.0.1:9/none";

function run(entry: string, args: string[]) {
  return spawnSync(process.execPath, ["--import", "tsx", entry, ...args], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, DATABASE_URL: NOWHERE, BANK_URL: "http://127.0.0.1:9", NODE_OPTIONS: "" },
  });
}

describe("--help on every command", () => {
  it.each(COMMANDS)(
    "npm run %s -- --help prints its usage on stdout and exits 0",
    (script, entry) => {
      // `-h` once (reconcile), `--help` everywhere else: each run loads the command's TypeScript (seconds here).
      const flag = script === "reconcile" ? "-h" : "--help";
      const result = run(entry, [flag]);
      expect(result.stderr, `${script} ${flag}`).not.toMatch(/unknown option/i);
      expect(result.status, `${script} ${flag}: ${result.stderr}`).toBe(0);
      const usage = script === "test" || script === "start" ? `usage: npm ${script}` : `usage: npm run ${script}`;
      expect(result.stdout.startsWith(usage), `${script} ${flag}: ${result.stdout}`).toBe(true);
    },
    120_000,
  );

  it("negative control: without --help the same command fails on the unreachable database", () => {
    const result = run("scripts/migrate.ts", []);
    expect(result.status).toBe(2);
    expect(result.stdout).not.toContain("usage:");
  });
});
