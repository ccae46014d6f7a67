/**
 * prisma/schema.prisma must describe exactly what the SQL migrations build: the migrations
 * are the source of truth (Prisma's migrate engine cannot run here), and Prisma's client must not believe in a
 * column, type, nullability or unique key that the database does not have, or miss one it has.
 * Also: every unique index on the money tables leads with user_id (docs/scaling.md).
 */
import { describe, expect, it } from "vitest";
import { testPool } from "../helpers/db";
import { POSTGRES_TYPES, readPrismaModels, type PrismaModel } from "../helpers/prisma-schema";

interface Column {
  table_name: string;
  column_name: string;
  data_type: string;
  is_nullable: "YES" | "NO";
}

/** The migrator's own records (lib/migrate.ts: migrations and function files applied) have no Prisma model. */
async function liveColumns(): Promise<Column[]> {
  const result = await testPool().query<Column>(
    `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name NOT IN ('_schema_migrations', '_schema_functions')
      ORDER BY table_name, ordinal_position`,
  );
  return result.rows;
}

async function liveUniqueIndexes(): Promise<{ table: string; name: string; columns: string[] }[]> {
  const result = await testPool().query<{ table: string; name: string; columns: string[] }>(
    `SELECT t.relname AS table, i.relname AS name,
            array_agg(a.attname::text ORDER BY k.ord) AS columns
       FROM pg_index x
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_class t ON t.oid = x.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
       CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord)
       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
      WHERE x.indisunique AND t.relname NOT IN ('_schema_migrations', '_schema_functions')
      GROUP BY t.relname, i.relname`,
  );
  return result.rows;
}

/** Every difference between the Prisma models and the live columns/unique keys, as readable lines. */
function drift(models: PrismaModel[], columns: Column[], uniques: { table: string; columns: string[] }[]): string[] {
  const problems: string[] = [];
  const tables = new Set(columns.map((c) => c.table_name));
  const modelTables = new Set(models.map((m) => m.table));
  for (const table of tables) if (!modelTables.has(table)) problems.push(`table ${table} has no Prisma model`);
  for (const model of models) {
    if (!tables.has(model.table)) {
      problems.push(`model ${model.name}: table ${model.table} does not exist`);
      continue;
    }
    const live = columns.filter((c) => c.table_name === model.table);
    for (const column of live) {
      if (!model.fields.some((f) => f.column === column.column_name))
        problems.push(`${model.table}.${column.column_name} missing from model ${model.name}`);
    }
    for (const field of model.fields) {
      const column = live.find((c) => c.column_name === field.column);
      if (!column) {
        problems.push(`${model.name}.${field.name}: column ${model.table}.${field.column} does not exist`);
        continue;
      }
      if (!(POSTGRES_TYPES[field.type] ?? []).includes(column.data_type)) {
        problems.push(`${model.table}.${field.column}: Prisma ${field.type} vs PostgreSQL ${column.data_type}`);
      }
      if (field.optional !== (column.is_nullable === "YES")) {
        problems.push(
          `${model.table}.${field.column}: Prisma ${field.optional ? "optional" : "required"} vs ${column.is_nullable === "YES" ? "NULL" : "NOT NULL"}`,
        );
      }
    }
    const liveKeys = uniques.filter((u) => u.table === model.table).map((u) => u.columns.join(","));
    const modelKeys = model.uniques.map((u) => u.join(","));
    for (const key of liveKeys)
      if (!modelKeys.includes(key)) problems.push(`${model.table}: unique (${key}) missing from model`);
    for (const key of modelKeys)
      if (!liveKeys.includes(key)) problems.push(`${model.table}: model unique (${key}) not in the database`);
  }
  return problems;
}

describe("schema drift", () => {
  it("prisma/schema.prisma and the migrated database agree on tables, columns, types, nullability and unique keys", async () => {
    expect(drift(readPrismaModels(), await liveColumns(), await liveUniqueIndexes())).toEqual([]);
  });

  it("the comparison bites: a model with a renamed column, a wrong type and a dropped unique is reported", async () => {
    const models = readPrismaModels().map((model) =>
      model.table !== "wallets"
        ? model
        : {
            ...model,
            fields: model.fields.map((f) =>
              f.column === "balance_minor" ? { ...f, column: "balance", type: "Int" } : f,
            ),
            uniques: [],
          },
    );
    const problems = drift(models, await liveColumns(), await liveUniqueIndexes());
    expect(problems).toContain(
      "wallets.balance_minor missing from model wallets".replace("model wallets", "model Wallet"),
    );
    expect(problems).toContain("Wallet.balanceMinor: column wallets.balance does not exist");
    expect(problems).toContain("wallets: unique (user_id) missing from model");
  });
});

/** Tables whose rows belong to one user: distributed by user_id when scaled out (docs/scaling.md). */
const USER_SCOPED_TABLES = [
  "wallets",
  "ledger_entries",
  "ledger_transitions",
  "ledger_postings",
  "reward_cap_days",
  "payout_limit_days",
];

function indexesWithoutLeadingUserId(indexes: { table: string; name: string; columns: string[] }[]): string[] {
  return indexes
    .filter((i) => USER_SCOPED_TABLES.includes(i.table) && i.columns[0] !== "user_id")
    .map((i) => `${i.table}.${i.name} (${i.columns.join(", ")})`);
}

describe("scale-out readiness", () => {
  it("every unique index on the wallet and ledger tables leads with user_id", async () => {
    expect(indexesWithoutLeadingUserId(await liveUniqueIndexes())).toEqual([]);
  });

  it("the check bites: a unique index without user_id first is reported", async () => {
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      await client.query("CREATE UNIQUE INDEX drift_probe_bad ON ledger_entries (bank_charge_id, user_id)");
      const result = await client.query(
        `SELECT t.relname AS table, i.relname AS name, array_agg(a.attname::text ORDER BY k.ord) AS columns
           FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
           CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord)
           JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
          WHERE x.indisunique AND t.relname = 'ledger_entries' GROUP BY t.relname, i.relname`,
      );
      expect(indexesWithoutLeadingUserId(result.rows)).toEqual([
        "ledger_entries.drift_probe_bad (bank_charge_id, user_id)",
      ]);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
});
