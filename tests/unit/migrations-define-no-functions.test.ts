/**
 * Numbered migrations written after decision 052 define no function: every function's one definition is its file in
 * prisma/functions (docs/development.md note 1). A `CREATE OR REPLACE FUNCTION` in a new migration, or a
 * `DROP FUNCTION` followed by a `CREATE FUNCTION`, would replace a function whose file is unchanged, and the migrator,
 * finding that file's checksum recorded, would leave the migration's version in place on every database that already
 * had the file. (On a new database the file would be applied after it, so the database comparison in
 * tests/integration/function-files.test.ts cannot see this: hence a check of the text.) The one definition a
 * migration may hold is a new trigger's placeholder: a plain `CREATE FUNCTION` inside
 * `IF to_regprocedure('<name>(...)') IS NULL THEN`, which never replaces anything (docs/decisions/052).
 * The finder is a pure function; the first tests feed it known-bad text (the negative controls).
 */
import { describe, expect, it } from "vitest";
import { readMigrationFiles } from "../../lib/migrate";

/**
 * The last migration written before decision 052. It and the ones before it are applied history, never edited
 * (docs/development.md note 1), and still hold the `CREATE FUNCTION` statements they applied then.
 */
const LAST_MIGRATION_WITH_FUNCTIONS = "20261208100000_give_backs_within_charge";

/**
 * How much text above a `CREATE FUNCTION` is read for its placeholder guard, in characters: the guard,
 * `IF to_regprocedure('name(argument types)') IS NULL THEN`, must be the line right above it, and such a line is
 * under 200 characters.
 */
const PLACEHOLDER_GUARD_REACH = 300;

/** Each function definition in `sql` that is not a placeholder, as the line it starts on. */
function functionDefinitions(sql: string): string[] {
  const found: string[] = [];
  for (const match of sql.matchAll(/^[ \t]*CREATE\s+(OR\s+REPLACE\s+)?FUNCTION\b[^\n]*/gim)) {
    const guarded = sql.slice(Math.max(0, match.index - PLACEHOLDER_GUARD_REACH), match.index);
    const placeholder = !match[1] && /IF\s+to_regprocedure\('[^']*'\)\s+IS\s+NULL\s+THEN\s*$/i.test(guarded);
    if (!placeholder) found.push(match[0].trim());
  }
  return found;
}

describe("the finder catches what it must (negative controls)", () => {
  it("finds CREATE OR REPLACE FUNCTION and an unguarded CREATE FUNCTION, in any case and indentation", () => {
    const sql = [
      "CREATE TABLE t (id int);",
      "create or replace function a() returns int language sql as $$ select 1 $$;",
      "DROP FUNCTION b(int);",
      "  CREATE FUNCTION b(p bigint) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;",
      "-- a comment that says CREATE FUNCTION is not one",
    ].join("\n");
    expect(functionDefinitions(sql)).toEqual([
      "create or replace function a() returns int language sql as $$ select 1 $$;",
      "CREATE FUNCTION b(p bigint) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;",
    ]);
  });

  it("lets a guarded placeholder through, but not a guarded CREATE OR REPLACE", () => {
    const placeholder = [
      "DO $$",
      "BEGIN",
      "  IF to_regprocedure('c_stamp()') IS NULL THEN",
      "    CREATE FUNCTION c_stamp() RETURNS trigger LANGUAGE plpgsql",
      "      AS $f$ BEGIN RAISE EXCEPTION 'placeholder'; END $f$;",
      "  END IF;",
      "END",
      "$$;",
    ].join("\n");
    expect(functionDefinitions(placeholder)).toEqual([]);
    expect(functionDefinitions(placeholder.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))).toHaveLength(1);
  });
});

describe("numbered migrations after decision 052", () => {
  const migrations = readMigrationFiles();

  it("the boundary is a migration on disk (the rule cannot pass by naming none)", () => {
    expect(migrations.map((migration) => migration.name)).toContain(LAST_MIGRATION_WITH_FUNCTIONS);
  });

  it("define no function (a function's change is an edit of its file in prisma/functions)", () => {
    const later = migrations.filter((migration) => migration.name > LAST_MIGRATION_WITH_FUNCTIONS);
    const definitions = later.flatMap((migration) =>
      functionDefinitions(migration.sql).map((line) => `${migration.name}: ${line}`),
    );
    expect(definitions).toEqual([]);
  });
});
