/**
 * `node --import tsx bench/notify-ceiling.ts [--seconds N] [--rounds N]`: what the live-status trigger costs
 * PostgreSQL at its ceiling (docs/decisions/046-announce-only-watched-users.md). pgbench inserts top-up rows for
 * 1,000 users at 32 connections, one row per transaction, on the migrated schema of a fresh embedded PostgreSQL,
 * with the row trigger in three forms, interleaved in each round so the machine's drift falls on all of them:
 *
 * - `always`: the trigger of decision 025, a `pg_notify` for every row (its function is restored for the run);
 * - `unwatched`: today's trigger with nobody in `live_watchers` (the common case: no wallet page open);
 * - `watched`: today's trigger with every user watched (every row announced, plus the gate's lock and lookup).
 *
 * Prints transactions per second per form, medians over the rounds, and the ratios to `always`. Figures only:
 * nothing asserts on time. Loopback only; stops its PostgreSQL on every path.
 */
import { parseArgs } from "node:util";
import pg from "pg";
import { startStack } from "../scripts/lib/stack";
import { findPgbench, PGBENCH_PACKAGE, runPgbench } from "./ledger-vs-pgbench";
import { percentile } from "./stats";
import { exitWithHelpIfAsked } from "../scripts/lib/cli-help";

const USERS = 1_000;
const CONNECTIONS = 32;

/** Decision 025's trigger function, as migration 20261201140000 created it: every row announced. */
const ANNOUNCE_ALWAYS_SQL = `
CREATE OR REPLACE FUNCTION ledger_change_notify_always() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(
    'ledger_changes',
    json_build_object('userId', NEW.user_id, 'type', NEW.type, 'refId', NEW.ref_id, 'status', NEW.status)::text
  );
  RETURN NULL;
END
$$`;

/** Points the insert trigger at `fn` (the benchmark's own database only). */
const insertTriggerOnFunctionSql = (fn: string) => `
DROP TRIGGER ledger_entries_change_notify_insert ON ledger_entries;
CREATE TRIGGER ledger_entries_change_notify_insert AFTER INSERT ON ledger_entries
  FOR EACH ROW WHEN (NEW.type IN ('topup', 'adjustment')) EXECUTE FUNCTION ${fn}()`;

/** One top-up row per transaction, for a random user, with a fresh reference. */
const INSERT_SCRIPT = `\\set u random(1, ${USERS})
INSERT INTO ledger_entries (user_id, type, ref_id, amount_minor, currency, fingerprint, params, status)
VALUES ('notify-bench-' || :u, 'topup', 'nb-' || nextval('notify_bench_ref'), 100, 'USD', repeat('a', 64), '{}', 'processing');
`;

const FORMS = ["always", "unwatched", "watched"] as const;
type Form = (typeof FORMS)[number];

async function prepareForm(db: pg.Pool, form: Form): Promise<void> {
  await db.query(
    insertTriggerOnFunctionSql(form === "always" ? "ledger_change_notify_always" : "ledger_change_notify"),
  );
  await db.query("DELETE FROM live_watchers");
  if (form === "watched") {
    await db.query(
      "SELECT live_watchers_register(array_agg('notify-bench-' || n), 3600) FROM generate_series(1, $1) AS n",
      [USERS],
    );
  }
}

const HELP = `usage: node --import tsx bench/notify-ceiling.ts [--rounds N] [--seconds N]

The live-status trigger at PostgreSQL's ceiling (docs/decisions/046): pgbench inserts top-up rows at 32
connections with the trigger announcing every row (decision 025), nobody watching, and everyone watching;
medians of the rounds and ratios to the first. Needs pgbench (apt postgresql-15).
  --rounds N      rounds, each running the three forms (default 3)
  --seconds N     length of one pgbench run (default 8)
Exit codes: 0 measured; 1 failed.`;

async function main(): Promise<void> {
  exitWithHelpIfAsked(HELP);
  const { values } = parseArgs({ options: { seconds: { type: "string" }, rounds: { type: "string" } } });
  const seconds = Number(values.seconds ?? 8);
  const rounds = Number(values.rounds ?? 3);
  const pgbench = findPgbench();
  if (!pgbench) throw new Error(`pgbench is missing: apt-get install -y ${PGBENCH_PACKAGE}`);
  const stack = await startStack({ withApp: false, label: "bench-notify" });
  const db = new pg.Pool({ connectionString: stack.databaseUrl, max: 2 });
  try {
    await db.query(
      `INSERT INTO "user" (id, name, email) SELECT 'notify-bench-' || n, 'bench', 'notify-bench-' || n || '@bench.test'
         FROM generate_series(1, $1) AS n`,
      [USERS],
    );
    await db.query("CREATE SEQUENCE notify_bench_ref");
    await db.query(ANNOUNCE_ALWAYS_SQL);
    const tps = new Map<Form, number[]>(FORMS.map((form) => [form, []]));
    for (let round = 1; round <= rounds; round++) {
      // Each round in another order: the first run of a round meets a colder table than the last.
      const order = round % 2 === 1 ? FORMS : [...FORMS].reverse();
      for (const form of order) {
        await prepareForm(db, form);
        const figures = await runPgbench({
          pgbench,
          databaseUrl: stack.databaseUrl,
          script: { text: INSERT_SCRIPT, defines: [] },
          concurrency: CONNECTIONS,
          durationS: seconds,
        });
        tps.get(form)!.push(figures.txPerS);
        process.stderr.write(`round ${round} ${form}: ${figures.txPerS.toFixed(0)} tx/s\n`);
      }
    }
    const median = (form: Form) => percentile(tps.get(form)!, 50) ?? 0;
    const always = median("always");
    process.stdout.write(
      `top-up row inserts, ${CONNECTIONS} connections, ${rounds} round(s) of ${seconds} s, median tx/s\n` +
        FORMS.map(
          (form) => `${form.padEnd(10)} ${median(form).toFixed(0).padStart(6)}  ${(median(form) / always).toFixed(2)}x`,
        ).join("\n") +
        "\n",
    );
  } finally {
    await db.end();
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `notify-ceiling failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
