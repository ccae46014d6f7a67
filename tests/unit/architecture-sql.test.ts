/**
 * ARCHITECTURE.md's two tables about the SQL, held to the code (docs that are current, not logs; decision 053):
 *  - "Where the SQL lives": one row per database function, linking its file in prisma/functions and naming every
 *    caller: the functions whose bodies call it and the lib/ and app/ files that send it; a trigger's function names
 *    the tables whose triggers run it (their CREATE TRIGGER in prisma/migrations). The callers are found in the code
 *    with comments removed, so a header that still names a former caller does not count.
 *  - "Each money rule, and its one place": one row per rule, its place(s), and the pattern that finds the rule's text
 *    in lib/, app/ and prisma/functions; the files that match must be exactly the places listed.
 *  - Every write of a money table in lib/ is sent from lib/ledger (the storage part), never from a domain folder.
 * Negative controls: the finders run on made-up sources (a caller in a comment, a second copy of a rule, a write from
 * a domain folder), and must see or ignore each as the rule says.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(__dirname, "../..");
const FUNCTIONS_DIR = "prisma/functions";
/** Where the application's code lives: what runs in production (scripts/, bench/ and tests seed data on purpose). */
const CODE_DIRS = ["lib", "app", FUNCTIONS_DIR];
/** The tables that hold money or its history. */
const MONEY_TABLES = [
  "ledger_entries",
  "ledger_transitions",
  "ledger_postings",
  "wallets",
  "reward_cap_days",
  "payout_limit_days",
];

interface SourceFile {
  /** Path from the repository's root. */
  readonly path: string;
  /** The text without its comments (`--` in SQL; `//` and block comments in TypeScript). */
  readonly code: string;
}

function walk(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return walk(path);
    return /\.(ts|tsx|sql)$/.test(name) ? [path] : [];
  });
}

/** `text` without comments. A `//` right after `:` is a URL's, not a comment. */
function withoutComments(path: string, text: string): string {
  if (path.endsWith(".sql")) return text.replace(/--[^\n]*/g, "");
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/[^\n]*/g, "$1");
}

function readSources(dirs: readonly string[]): SourceFile[] {
  return dirs
    .flatMap(walk)
    .map((path) => ({ path, code: withoutComments(path, readFileSync(join(ROOT, path), "utf8")) }));
}

/** The name a caller has in the table: a function file's function name, or a file's path. */
function callerName(path: string): string {
  return path.startsWith(`${FUNCTIONS_DIR}/`) ? path.slice(FUNCTIONS_DIR.length + 1, -".sql".length) : path;
}

/** Everything in `sources` that calls `name(...)`, other than its own file. */
function callersOf(name: string, sources: readonly SourceFile[]): string[] {
  const call = new RegExp(`\\b${name}\\s*\\(`);
  return sources
    .filter((source) => source.path !== `${FUNCTIONS_DIR}/${name}.sql` && call.test(source.code))
    .map((source) => callerName(source.path))
    .sort();
}

/** The rows of the table under the heading `## heading` of `markdown`, each as its cells (header and rule skipped). */
function tableRows(markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`ARCHITECTURE.md has no section "${heading}"`);
  const end = markdown.indexOf("\n## ", start + 1);
  const lines = markdown.slice(start, end < 0 ? undefined : end).split("\n");
  return lines
    .filter((line) => line.startsWith("|"))
    .slice(2)
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
}

/** The backticked words of a cell. */
function ticked(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

/** The files in `sources` that match `pattern`. */
function placesOf(pattern: RegExp, sources: readonly SourceFile[]): string[] {
  return sources
    .filter((source) => pattern.test(source.code))
    .map((source) => source.path)
    .sort();
}

const MONEY_WRITE = new RegExp(`\\b(?:INSERT\\s+INTO|UPDATE|DELETE\\s+FROM)\\s+(?:${MONEY_TABLES.join("|")})\\b`);

/**
 * The files outside lib/ledger and prisma/functions that write a money table: with an INSERT, UPDATE or DELETE of
 * their own, or by calling a database function that writes one (itself, or through the functions it calls).
 */
function moneyWritesOutsideLedger(sources: readonly SourceFile[]): string[] {
  const functions = sources.filter((s) => s.path.startsWith(`${FUNCTIONS_DIR}/`));
  const writers = new Set(functions.filter((s) => MONEY_WRITE.test(s.code)).map((s) => callerName(s.path)));
  for (let grew = true; grew; ) {
    grew = false;
    for (const name of [...writers])
      for (const caller of callersOf(name, functions))
        if (!writers.has(caller)) {
          writers.add(caller);
          grew = true;
        }
  }
  const callsWriter = (code: string) => [...writers].some((name) => new RegExp(`\\b${name}\\s*\\(`).test(code));
  return sources
    .filter((s) => !s.path.startsWith("lib/ledger/") && !s.path.startsWith(`${FUNCTIONS_DIR}/`))
    .filter((s) => MONEY_WRITE.test(s.code) || callsWriter(s.code))
    .map((s) => s.path);
}

const architecture = readFileSync(join(ROOT, "ARCHITECTURE.md"), "utf8");
const sources = readSources(CODE_DIRS);
const migrations = readSources(["prisma/migrations"]);

describe("ARCHITECTURE.md, where the SQL lives", () => {
  const rows = tableRows(architecture, "Where the SQL lives");
  const documented = rows.map(([first]) => /^\[`(\w+)`\]\(prisma\/functions\/(\w+)\.sql\)/.exec(first ?? ""));

  it("has one row per function file, each linking its own file", () => {
    const files = readdirSync(join(ROOT, FUNCTIONS_DIR))
      .filter((name) => name.endsWith(".sql"))
      .map((name) => name.slice(0, -".sql".length))
      .sort();
    expect(documented.every((match) => match !== null && match[1] === match[2])).toBe(true);
    expect(documented.map((match) => match![1]).sort()).toEqual(files);
  });

  it("names every caller of each function, and nothing that does not call it", () => {
    const wrong = rows.flatMap((row, i) => {
      const name = documented[i]![1]!;
      const listed = ticked(row.at(-1)!).sort();
      if (/RETURNS trigger/.test(readFileSync(join(ROOT, FUNCTIONS_DIR, `${name}.sql`), "utf8"))) {
        const trigger = new RegExp(`ON\\s+(\\w+)[^;]*EXECUTE FUNCTION ${name}\\(`, "g");
        const tables = [...new Set(migrations.flatMap((m) => [...m.code.matchAll(trigger)].map((t) => t[1]!)))];
        return JSON.stringify(tables.sort()) === JSON.stringify(listed) ? [] : [{ name, listed, actual: tables }];
      }
      const actual = callersOf(name, sources);
      return JSON.stringify(actual) === JSON.stringify(listed) ? [] : [{ name, listed, actual }];
    });
    expect(wrong).toEqual([]);
  });

  it("no file outside lib/ledger writes a money table, itself or through a database function", () => {
    expect(moneyWritesOutsideLedger(sources)).toEqual([]);
  });
});

describe("ARCHITECTURE.md, each money rule and its one place", () => {
  const rows = tableRows(architecture, "Each money rule, and its one place");

  it("lists the rules, each with its places and the pattern that finds it", () => {
    expect(rows.length).toBeGreaterThanOrEqual(7);
    for (const row of rows) expect(row).toHaveLength(3);
  });

  it("each rule's text is found exactly in the places listed", () => {
    const wrong = rows.flatMap(([rule, places, pattern]) => {
      // A table cell escapes `|` as `\|`.
      const found = placesOf(new RegExp(ticked(pattern!)[0]!.replaceAll("\\|", "|")), sources);
      const listed = ticked(places!).sort();
      return JSON.stringify(found) === JSON.stringify(listed) ? [] : [{ rule, listed, found }];
    });
    expect(wrong).toEqual([]);
  });
});

describe("negative controls of the finders", () => {
  const fake = (path: string, text: string): SourceFile => ({ path, code: withoutComments(path, text) });

  it("a caller named only in a comment is no caller; a call in a statement's text is", () => {
    const files = [
      fake("lib/a.ts", "// calls ledger_claim(...) through claim.ts\nconst x = 1;"),
      fake("lib/b.ts", "const SQL = `SELECT * FROM ledger_claim(p_user_id => $1)`;"),
      fake(`${FUNCTIONS_DIR}/other.sql`, "-- ledger_claim(\nSELECT ledger_claim_refund(1);"),
      fake(`${FUNCTIONS_DIR}/ledger_claim.sql`, "CREATE OR REPLACE FUNCTION ledger_claim(p text)"),
    ];
    expect(callersOf("ledger_claim", files)).toEqual(["lib/b.ts"]);
  });

  it("a second copy of a rule is a second place", () => {
    const claim = /ON CONFLICT \(user_id, type, ref_id\)/;
    const files = [
      fake(
        `${FUNCTIONS_DIR}/ledger_claim.sql`,
        "INSERT INTO ledger_entries ON CONFLICT (user_id, type, ref_id) DO NOTHING",
      ),
      fake(
        "lib/topups/x.ts",
        "const SQL = `INSERT INTO ledger_entries ON CONFLICT (user_id, type, ref_id) DO NOTHING`;",
      ),
    ];
    expect(placesOf(claim, files)).toEqual(["lib/topups/x.ts", `${FUNCTIONS_DIR}/ledger_claim.sql`]);
  });

  it("a money write from a domain folder is found, its own or through a function that calls a writer; from lib/ledger it is not", () => {
    const files = [
      fake("lib/topups/x.ts", "await db.query(`UPDATE wallets SET balance_minor = 0`);"),
      fake("lib/ledger/x.ts", "await db.query(`UPDATE ledger_entries SET bank_charge_id = $1`);"),
      fake("lib/admin/y.ts", "// UPDATE wallets SET nothing: a comment"),
      fake(`${FUNCTIONS_DIR}/w.sql`, "CREATE FUNCTION w() ... INSERT INTO ledger_transitions VALUES (1)"),
      fake(`${FUNCTIONS_DIR}/v.sql`, "CREATE FUNCTION v() ... PERFORM w();"),
      fake("lib/webhooks/z.ts", "await db.query(`SELECT v()`);"),
      fake("lib/webhooks/r.ts", "await db.query(`SELECT r()`);"),
    ];
    expect(moneyWritesOutsideLedger(files)).toEqual(["lib/topups/x.ts", "lib/webhooks/z.ts"]);
  });
});
