/**
 * No hot row in the books (docs/decisions/058): every credit of part 1 posts its house leg to one house account
 * (a reward's `rewards_funded`; a top-up's would be `bank_clearing`), and the account has no balance row, so 32
 * concurrent credits on 10,000 wallets should run as fast as when their house legs go to 32 different accounts.
 * The control is what the usual design does: the same credits with a per-movement UPDATE of one house balance row in
 * the same transaction (a scratch table, `bench_house_balance`, updated by a trigger on the house leg), which queues
 * every credit on that row's lock until its commit.
 *
 * Three variants of the same in-process credit (lib/ledger's `decideRewardUnderWalletLock`, c=32, 10,000 wallets), on
 * part 1's database, each measured twice in rounds whose order reverses (ABC CBA):
 * - `one house account`: the house legs as the release writes them, all to one account;
 * - `32 house accounts`: each house leg renamed by a BEFORE INSERT trigger to one of 32 accounts picked by the user
 *   (`rewards_funded_0` .. `_31`), so concurrent legs do not share the house index's right edge;
 * - `one house balance row (control)`: as the first, plus an AFTER INSERT trigger that adds the house leg to one row.
 * The first two run the same BEFORE trigger function (identity for the first), so they pay the same trigger cost.
 * Everything is dropped afterwards; the renamed postings stay in the bench database (nothing audits it).
 */
import type { Pool } from "pg";
import { cpuSnapshot, cpuUse, type CpuTargets, type CpuUse } from "./cpu-accounting";
import type { TxFigures } from "./ledger-vs-pgbench";

export const HOUSE_VARIANTS = ["one house account", "32 house accounts", "one house balance row (control)"] as const;
export type HouseVariant = (typeof HOUSE_VARIANTS)[number];

/** Spread of the `32 house accounts` variant. */
const HOUSE_ACCOUNTS_SPREAD = 32;

/** The BEFORE trigger's function body per variant: identity, or the house leg renamed to one of 32 accounts. */
const LEG_BODY: Record<"identity" | "spread", string> = {
  identity: `IF NEW.account <> 'wallet' THEN NEW.account := NEW.account || ''; END IF; RETURN NEW;`,
  spread: `IF NEW.account <> 'wallet' THEN
             NEW.account := NEW.account || '_' || (abs(hashtext(NEW.user_id)) % ${HOUSE_ACCOUNTS_SPREAD});
           END IF; RETURN NEW;`,
};

async function setLegFunction(db: Pool, body: "identity" | "spread"): Promise<void> {
  // CREATE OR REPLACE: each session's plpgsql recompiles the function on its next call.
  await db.query(
    `CREATE OR REPLACE FUNCTION bench_house_leg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${LEG_BODY[body]} END $$`,
  );
}

async function setControl(db: Pool, on: boolean): Promise<void> {
  await db.query("DROP TRIGGER IF EXISTS bench_house_balance_update ON ledger_postings");
  if (on)
    await db.query(
      `CREATE TRIGGER bench_house_balance_update AFTER INSERT ON ledger_postings FOR EACH ROW
         WHEN (NEW.account <> 'wallet') EXECUTE FUNCTION bench_house_balance_update()`,
    );
}

export interface HouseRow {
  readonly variant: HouseVariant;
  readonly round: number;
  readonly figures: TxFigures;
  readonly cpu: CpuUse;
  /** Distinct house accounts the variant's credits posted to (read back from the postings). */
  readonly houseAccounts: number;
}

/** Per variant: the mean tx/s of its rounds, the worst p99, PostgreSQL's CPU per credit, and the ratio to `32 house accounts`. */
export interface HouseSummary {
  readonly variant: HouseVariant;
  readonly txPerS: number;
  readonly p99Ms: number | null;
  readonly postgresCpuMsPerTx: number;
  readonly houseAccounts: number;
  readonly ratio: number | null;
}

export async function benchHouseAccount(options: {
  db: Pool;
  seconds: number;
  targets: CpuTargets;
  users: number;
  runInProcess: (run: { concurrency: number; durationS: number; users: number }) => Promise<TxFigures>;
}): Promise<{ rows: HouseRow[]; summary: HouseSummary[] }> {
  const { db } = options;
  await db.query(`CREATE TABLE bench_house_balance (account text PRIMARY KEY, balance_minor bigint NOT NULL)`);
  await db.query(`INSERT INTO bench_house_balance SELECT name, 0 FROM ledger_accounts WHERE kind = 'house'`);
  await db.query(
    `CREATE FUNCTION bench_house_balance_update() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       UPDATE bench_house_balance SET balance_minor = balance_minor + NEW.amount_minor WHERE account = NEW.account;
       RETURN NULL;
     END $$`,
  );
  await setLegFunction(db, "identity");
  await db.query(
    "CREATE TRIGGER bench_house_leg BEFORE INSERT ON ledger_postings FOR EACH ROW EXECUTE FUNCTION bench_house_leg()",
  );
  const rows: HouseRow[] = [];
  try {
    const order = [...HOUSE_VARIANTS, ...[...HOUSE_VARIANTS].reverse()];
    for (const [index, variant] of order.entries()) {
      await setLegFunction(db, variant === "32 house accounts" ? "spread" : "identity");
      await setControl(db, variant === "one house balance row (control)");
      await db.query("CHECKPOINT");
      const since = await db.query<{ id: string }>("SELECT COALESCE(max(id), 0)::text AS id FROM ledger_postings");
      const before = cpuSnapshot(options.targets);
      const figures = await options.runInProcess({
        concurrency: 32,
        durationS: options.seconds,
        users: options.users,
      });
      const cpu = cpuUse(before, cpuSnapshot(options.targets));
      const accounts = await db.query<{ n: number }>(
        "SELECT count(DISTINCT account)::int AS n FROM ledger_postings WHERE id > $1::bigint AND account <> 'wallet'",
        [since.rows[0]!.id],
      );
      rows.push({
        variant,
        round: index < HOUSE_VARIANTS.length ? 1 : 2,
        figures,
        cpu,
        houseAccounts: accounts.rows[0]!.n,
      });
    }
  } finally {
    await db.query("DROP TRIGGER IF EXISTS bench_house_balance_update ON ledger_postings");
    await db.query("DROP TRIGGER IF EXISTS bench_house_leg ON ledger_postings");
    await db.query("DROP FUNCTION IF EXISTS bench_house_leg()");
    await db.query("DROP FUNCTION IF EXISTS bench_house_balance_update()");
    await db.query("DROP TABLE IF EXISTS bench_house_balance");
  }
  const of = (variant: HouseVariant) => rows.filter((row) => row.variant === variant);
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  const spreadTxPerS = mean(of("32 house accounts").map((row) => row.figures.txPerS));
  const summary = HOUSE_VARIANTS.map((variant) => {
    const measured = of(variant);
    const txPerS = mean(measured.map((row) => row.figures.txPerS));
    const transactions = measured.reduce((sum, row) => sum + row.figures.transactions, 0);
    const postgresMs = measured.reduce((sum, row) => sum + row.cpu.postgres, 0);
    const p99s = measured.map((row) => row.figures.latencyP99Ms).filter((value): value is number => value !== null);
    return {
      variant,
      txPerS,
      p99Ms: p99s.length > 0 ? Math.max(...p99s) : null,
      postgresCpuMsPerTx: transactions > 0 ? postgresMs / transactions : 0,
      houseAccounts: Math.max(...measured.map((row) => row.houseAccounts)),
      ratio: spreadTxPerS > 0 ? txPerS / spreadTxPerS : null,
    };
  });
  return { rows, summary };
}
