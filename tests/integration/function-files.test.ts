/**
 * Every database function has one current definition, its file `prisma/functions/<name>.sql` (docs/decisions/052):
 * the functions of the migrated test database are compared with the files, both ways, on body, arguments, result
 * type, language and volatility (tests/helpers/function-files.ts). Negative controls, each in a transaction that is
 * rolled back: a function replaced by a copy of its file with one guard removed, a second function of a file's name,
 * a function with no file; and files altered on purpose: one with no function, one whose argument name or result
 * type differs.
 */
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { type FunctionFile, readFunctionFiles } from "../../lib/migrate";
import { testPool } from "../helpers/db";
import { functionDefinition, functionFileDifferences } from "../helpers/function-files";

/** Runs `work` on a client of its own inside a transaction that is always rolled back. */
async function inRolledBackTransaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await testPool().connect();
  try {
    await client.query("BEGIN");
    return await work(client);
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

/** `files` with the text of the file `name` passed through `rewrite` (which must change it). */
function withRewrittenFile(files: FunctionFile[], name: string, rewrite: (sql: string) => string): FunctionFile[] {
  return files.map((file) => {
    if (file.name !== name) return file;
    const sql = rewrite(file.sql);
    if (sql === file.sql) throw new Error(`the rewrite no longer matches ${file.path}`);
    return { ...file, sql };
  });
}

const files = readFunctionFiles();

describe("the database's functions and their files", () => {
  it("every function of the public schema has its file, and every file its function, with the same body, arguments, result, language and volatility", async () => {
    // Not an empty comparison: the money path's functions are among the files.
    expect(files.map((file) => file.name)).toEqual(
      expect.arrayContaining(["ledger_claim_topup", "ledger_decide_payment", "ledger_decide_reward"]),
    );
    expect(await inRolledBackTransaction((client) => functionFileDifferences(client, files))).toEqual([]);
  });

  it("an extension's functions in the public schema are the extension's, not ours", async () => {
    const differences = await inRolledBackTransaction(async (client) => {
      await client.query("CREATE EXTENSION pgcrypto SCHEMA public");
      const added = await client.query("SELECT 1 FROM pg_proc WHERE proname = 'gen_salt'");
      expect(added.rowCount, "pgcrypto put its functions in public").toBeGreaterThan(0);
      return functionFileDifferences(client, files);
    });
    expect(differences).toEqual([]);
  });
});

describe("negative controls: the comparison finds each kind of difference", () => {
  it("a function whose body is not its file's (a copy of the file without ON CONFLICT, applied in the transaction)", async () => {
    const differences = await inRolledBackTransaction(async (client) => {
      const definition = functionDefinition("ledger_claim");
      const guard = "ON CONFLICT (user_id, type, ref_id) DO NOTHING";
      if (!definition.includes(guard)) throw new Error("the guard is no longer in the file");
      await client.query(definition.replace(guard, ""));
      return functionFileDifferences(client, files);
    });
    expect(differences).toEqual([
      expect.stringMatching(/^ledger_claim: the body differs from the one between the dollar quotes of /),
    ]);
  });

  it("a function with no file, and a second function of a file's name", async () => {
    const differences = await inRolledBackTransaction(async (client) => {
      await client.query("CREATE FUNCTION c52_without_file(p_n int) RETURNS int LANGUAGE sql AS $$ SELECT p_n $$");
      await client.query(
        "CREATE FUNCTION ledger_pending_credits_minor(p_user_id text, p_day text) RETURNS bigint LANGUAGE sql AS $$ SELECT 0::bigint $$",
      );
      return functionFileDifferences(client, files);
    });
    expect(differences).toEqual([
      "c52_without_file(p_n integer) has no file in prisma/functions",
      "ledger_pending_credits_minor: 2 functions of that name in the database, 1 in its file",
    ]);
  });

  it("a file with no function in the database", async () => {
    const extra: FunctionFile = {
      name: "c52_not_in_database",
      path: "prisma/functions/c52_not_in_database.sql",
      sql: "CREATE OR REPLACE FUNCTION c52_not_in_database() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n",
      checksum: "",
    };
    const differences = await inRolledBackTransaction((client) => functionFileDifferences(client, [...files, extra]));
    expect(differences).toEqual([
      "prisma/functions/c52_not_in_database.sql: the database has no function c52_not_in_database",
    ]);
  });

  it("a file whose argument name differs, and one whose result type differs", async () => {
    const renamed = withRewrittenFile(files, "live_watchers_register", (sql) =>
      sql.replace("p_ttl_s INTEGER)", "p_ttl_seconds INTEGER)"),
    );
    const retyped = withRewrittenFile(renamed, "ledger_pending_credits_minor", (sql) =>
      sql.replace("RETURNS bigint", "RETURNS numeric"),
    );
    const differences = await inRolledBackTransaction((client) => functionFileDifferences(client, retyped));
    expect(differences).toEqual([
      'ledger_pending_credits_minor: result differ: database "bigint", file "numeric"',
      'live_watchers_register: identityArguments differ: database "p_user_ids text[], p_ttl_s integer", file "p_user_ids text[], p_ttl_seconds integer"',
      'live_watchers_register: arguments differ: database "p_user_ids text[], p_ttl_s integer", file "p_user_ids text[], p_ttl_seconds integer"',
    ]);
  });
});
