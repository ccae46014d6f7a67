/**
 * The database functions' files, `prisma/functions/<name>.sql` (docs/decisions/052), as tests read them: the
 * definition a negative control rewrites, the body between its dollar quotes, and the comparison of the functions
 * a database holds with the files.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type pg from "pg";
import { DEFAULT_FUNCTIONS_DIR, type FunctionFile } from "../../lib/migrate";

/**
 * The `CREATE OR REPLACE FUNCTION` statement of `prisma/functions/<name>.sql`, from that line to the end, without
 * the header comment. A negative control rewrites this text, never `pg_get_functiondef`: the file is the
 * definition, and a guard's words quoted in the header would otherwise be the ones replaced.
 * Throws when the file is missing or holds no such statement.
 */
export function functionDefinition(name: string): string {
  const path = join(DEFAULT_FUNCTIONS_DIR, `${name}.sql`);
  if (!existsSync(path)) throw new Error(`no function file ${path}`);
  return definitionIn(readFileSync(path, "utf8"), path);
}

/** The statement of a function file's `text` (see {@link functionDefinition}); `where` names it in the error. */
function definitionIn(text: string, where: string): string {
  const start = text.search(/^CREATE OR REPLACE FUNCTION /m);
  if (start < 0) throw new Error(`${where} holds no line starting with CREATE OR REPLACE FUNCTION`);
  return text.slice(start);
}

/**
 * The body of a function definition: the text between its dollar quotes (`$$ ... $$` or `$tag$ ... $tag$`), which
 * is what PostgreSQL stores, byte for byte, as `pg_proc.prosrc`. Throws when there is none.
 */
function dollarQuotedBody(definition: string): string {
  const match = /\bAS\s+(\$(?:[A-Za-z_][A-Za-z_0-9]*)?\$)([\s\S]*?)\1/.exec(definition);
  if (!match) throw new Error("the definition has no dollar-quoted body after AS");
  return match[2]!;
}

/** A function as `pg_proc` describes it. */
interface CatalogFunction {
  name: string;
  /** `pg_get_function_identity_arguments`: the argument names and types that identify it. */
  identityArguments: string;
  /** `pg_get_function_arguments`: the same with defaults. */
  arguments: string;
  /** `pg_get_function_result`: e.g. `SETOF ledger_entries`, `TABLE(entry ledger_entries, ...)`. */
  result: string;
  /** `pg_proc.prosrc`. */
  body: string;
  language: string;
  /** `pg_proc.provolatile`: i, s or v. */
  volatility: string;
}

/** The functions of `schema` that belong to no extension (an extension's functions are its own, not ours). */
async function functionsIn(client: pg.ClientBase, schema: string): Promise<CatalogFunction[]> {
  const { rows } = await client.query<CatalogFunction>(
    `SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS "identityArguments",
            pg_get_function_arguments(p.oid) AS arguments, pg_get_function_result(p.oid) AS result,
            p.prosrc AS body, l.lanname AS language, p.provolatile AS volatility
       FROM pg_proc p
       JOIN pg_namespace n ON n.oid = p.pronamespace
       JOIN pg_language l ON l.oid = p.prolang
      WHERE n.nspname = $1
        AND NOT EXISTS (SELECT 1 FROM pg_depend d
                         WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
      ORDER BY p.proname, 2`,
    [schema],
  );
  return rows;
}

/** Where two descriptions of one function differ, as sentences naming `name`. */
function describedDifferences(name: string, live: CatalogFunction, file: CatalogFunction): string[] {
  const problems: string[] = [];
  for (const field of ["identityArguments", "arguments", "result", "language", "volatility"] as const) {
    if (live[field] !== file[field]) {
      problems.push(`${name}: ${field} differ: database "${live[field]}", file "${file[field]}"`);
    }
  }
  return problems;
}

/**
 * Every difference between the functions of the `public` schema (extensions' aside) and the function files
 * `files` (as `readFunctionFiles` returns them), as sentences naming the function; empty when they agree:
 * - a function with no file, a file with no function, more than one function of a file's name;
 * - a body (`pg_proc.prosrc`) other than the text between the dollar quotes of its file;
 * - arguments (`pg_get_function_identity_arguments`, `pg_get_function_arguments`), result type
 *   (`pg_get_function_result`), language or volatility other than the file's. The file's are read by PostgreSQL
 *   itself: each file is run in a schema of its own, first on the search path, so that both sides are printed by the
 *   same functions with the same path (no parser of ours to drift from PostgreSQL's).
 *
 * `client` must be inside a transaction that the caller rolls back: the scratch schema and the search path are
 * created in it with `SET LOCAL`. Throws on a database error (a file that does not run is a difference worth a
 * failure of its own).
 */
export async function functionFileDifferences(client: pg.ClientBase, files: FunctionFile[]): Promise<string[]> {
  const scratch = `function_files_${process.pid}`;
  await client.query(`CREATE SCHEMA ${scratch}`);
  // The files' copies go to the scratch schema; both sides are then printed under this one path, so a type prints
  // alike on both (ledger_entries, not public.ledger_entries, on each side).
  await client.query(`SET LOCAL search_path = ${scratch}, public`);
  for (const file of files) await client.query(file.sql);
  const fromFiles = await functionsIn(client, scratch);
  const live = await functionsIn(client, "public");
  await client.query("RESET search_path");

  const problems: string[] = [];
  const fileNames = new Set(files.map((file) => file.name));
  for (const fn of live) {
    if (!fileNames.has(fn.name)) problems.push(`${fn.name}(${fn.identityArguments}) has no file in prisma/functions`);
  }
  for (const file of files) {
    const named = live.filter((fn) => fn.name === file.name);
    const copy = fromFiles.filter((fn) => fn.name === file.name);
    if (named.length === 0) {
      problems.push(`${file.path}: the database has no function ${file.name}`);
      continue;
    }
    if (named.length > 1 || copy.length !== 1) {
      problems.push(`${file.name}: ${named.length} functions of that name in the database, ${copy.length} in its file`);
      continue;
    }
    if (named[0]!.body !== dollarQuotedBody(definitionIn(file.sql, file.path))) {
      problems.push(`${file.name}: the body differs from the one between the dollar quotes of ${file.path}`);
    }
    problems.push(...describedDifferences(file.name, named[0]!, copy[0]!));
  }
  return problems;
}
