/**
 * The layering ARCHITECTURE.md draws, enforced:
 *  - Transport stays thin: no file under app/ imports the database or Redis clients, or contains SQL. Route
 *    handlers and server actions parse, call lib/, and map the outcome.
 *  - lib/ledger is the bottom of the money path: it imports only its own files, the infrastructure below it
 *    (lib/db, lib/env, lib/log, lib/redis) and node:, pg, zod; nothing from a domain folder (topups, payments,
 *    rewards, ...) and no HTTP vocabulary (lib/http, lib/problems, next, Request/Response objects).
 *  - lib/ledger/index.ts is the one way in: no code outside lib/ledger imports one of its files, except lib/db.ts,
 *    which sits below the ledger and takes the Queryable type and the retry policy from their own files (through
 *    the index it would load the claim module, which imports lib/db, while lib/db itself is loading).
 *  - Domain folders (every lib/ folder but lib/ledger and the shared ones) keep their files internal: another lib/
 *    folder imports only their index.ts or a public file listed in ARCHITECTURE.md ("Domain folders and their
 *    public files"), which this test reads, so the table and the rule cannot drift apart.
 * Tests may import ledger files directly (white-box tests of one file).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const FORBIDDEN_IMPORTS = [
  /from\s+["'](?:@\/|(?:\.\.\/)+)lib\/db["']/,
  /from\s+["']pg["']/,
  /from\s+["']@prisma\//,
  /generated\/prisma/,
  /from\s+["']ioredis["']/,
  /(?:@\/|\.\.\/)lib\/redis["']/,
];
const SQL = /\b(SELECT\s+[\s\S]+?\s+FROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b/;

/** Lines of `source` that break the boundary, as "reason: line". */
function boundaryViolations(source: string): string[] {
  const found: string[] = [];
  for (const line of source.split("\n")) {
    if (FORBIDDEN_IMPORTS.some((pattern) => pattern.test(line))) found.push(`import: ${line.trim()}`);
    if (SQL.test(line)) found.push(`sql: ${line.trim()}`);
  }
  return found;
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : /\.(ts|tsx)$/.test(name) ? [path] : [];
  });
}

describe("app/ boundary", () => {
  it("no file under app/ imports the database or Redis client or contains SQL", () => {
    const violations = files("app").flatMap((file) =>
      boundaryViolations(readFileSync(file, "utf8")).map((v) => `${file}: ${v}`),
    );
    expect(violations).toEqual([]);
  });

  it("the check bites on each forbidden form", () => {
    expect(boundaryViolations('import { pool } from "@/lib/db";')).toHaveLength(1);
    expect(boundaryViolations('import { prisma } from "../../lib/db";')).toHaveLength(1);
    expect(boundaryViolations('import { Pool } from "pg";')).toHaveLength(1);
    expect(boundaryViolations('import { PrismaClient } from "@prisma/client";')).toHaveLength(1);
    expect(boundaryViolations('await client.query("SELECT id FROM ledger_entries")')).toHaveLength(1);
    expect(boundaryViolations("const q = `INSERT INTO wallets VALUES (1)`;")).toHaveLength(1);
    expect(boundaryViolations('import { getWallet } from "@/lib/wallet/get-wallet";')).toEqual([]);
  });
});

/** Module specifiers of every static or dynamic import and re-export in `source`. */
function importSpecifiers(source: string): string[] {
  return [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["']([^"']+)["']/gm)].map(
    (match) => match[1]!,
  );
}

/** Why lib/ledger may not import `specifier` (null: allowed). */
function ledgerImportViolation(specifier: string): string | null {
  if (specifier.startsWith("./")) return null;
  if (/^\.\.\/(db|env|log|redis)$/.test(specifier)) return null;
  if (specifier.startsWith("node:") || specifier === "pg" || specifier === "zod") return null;
  if (/^\.\.\/(http|problems)(\/|$)/.test(specifier) || /^next(\/|$)/.test(specifier)) return "HTTP vocabulary";
  if (specifier.startsWith("../")) return "a folder above the ledger";
  return "a package the ledger does not use";
}

/** HTTP objects a ledger file must not construct or name. */
const HTTP_OBJECTS = /\b(new Response|NextResponse|NextRequest|new Request|new Headers)\b/;

/** Whether `specifier`, imported by `file` (a path from the project root), reaches into lib/ledger past its index. */
function bypassesLedgerIndex(file: string, specifier: string): boolean {
  const target = specifier.startsWith("@/")
    ? specifier.slice(2)
    : specifier.startsWith(".")
      ? join(dirname(file), specifier)
      : null;
  if (target === null) return false;
  return target.startsWith("lib/ledger/") && target !== "lib/ledger/index";
}

const PRODUCTION_ROOTS = ["app", "lib", "scripts", "bench", "bank"];

function productionFiles(): string[] {
  const roots = PRODUCTION_ROOTS.flatMap((root) => files(root));
  const top = readdirSync(".").filter((name) => /\.(ts|tsx)$/.test(name) && !name.endsWith(".d.ts"));
  return [...roots, ...top].map((file) => relative(".", file));
}

describe("lib/ledger's boundary", () => {
  it("lib/ledger imports nothing from domain folders or HTTP vocabulary", () => {
    const violations = files("lib/ledger").flatMap((file) => {
      const source = readFileSync(file, "utf8");
      const imports = importSpecifiers(source).flatMap((specifier) => {
        const why = ledgerImportViolation(specifier);
        return why ? [`${file}: imports ${specifier} (${why})`] : [];
      });
      const objects = source.split("\n").filter((line) => HTTP_OBJECTS.test(line) && !/^\s*(\*|\/\/)/.test(line));
      return [...imports, ...objects.map((line) => `${file}: HTTP object: ${line.trim()}`)];
    });
    expect(violations).toEqual([]);
  });

  it("code outside lib/ledger enters it only through lib/ledger/index.ts (lib/db.ts aside)", () => {
    const violations = productionFiles()
      .filter((file) => !file.startsWith("lib/ledger/") && file !== "lib/db.ts")
      .flatMap((file) =>
        importSpecifiers(readFileSync(file, "utf8"))
          .filter((specifier) => bypassesLedgerIndex(file, specifier))
          .map((specifier) => `${file}: imports ${specifier}`),
      );
    expect(violations).toEqual([]);
  });

  it("the checks bite on each forbidden form (negative controls)", () => {
    expect(importSpecifiers('import { a } from "../topups/create-topup";\nexport * from "./claim";')).toEqual([
      "../topups/create-topup",
      "./claim",
    ]);
    expect(importSpecifiers('const m = await import("../http/route");')).toEqual(["../http/route"]);
    expect(ledgerImportViolation("../topups/create-topup")).toBe("a folder above the ledger");
    expect(ledgerImportViolation("../http/respond")).toBe("HTTP vocabulary");
    expect(ledgerImportViolation("../problems")).toBe("HTTP vocabulary");
    expect(ledgerImportViolation("next/server")).toBe("HTTP vocabulary");
    expect(ledgerImportViolation("ioredis")).toBe("a package the ledger does not use");
    expect(ledgerImportViolation("../db")).toBeNull();
    expect(ledgerImportViolation("./claim")).toBeNull();
    expect(HTTP_OBJECTS.test("return new Response(body)")).toBe(true);
    expect(bypassesLedgerIndex("lib/topups/create-topup.ts", "../ledger/claim")).toBe(true);
    expect(bypassesLedgerIndex("app/page.tsx", "@/lib/ledger/views")).toBe(true);
    expect(bypassesLedgerIndex("bench/run.ts", "../lib/ledger/retry")).toBe(true);
    expect(bypassesLedgerIndex("lib/money.ts", "./ledger/claim")).toBe(true);
    expect(bypassesLedgerIndex("lib/topups/create-topup.ts", "../ledger")).toBe(false);
    expect(bypassesLedgerIndex("lib/ledger/claim.ts", "./keys")).toBe(true);
    expect(bypassesLedgerIndex("app/page.tsx", "@/lib/ledger")).toBe(false);
  });
});

/** What ARCHITECTURE.md declares: the shared folders and each domain folder's public files (names without .ts). */
interface DomainSurface {
  shared: Set<string>;
  publicFiles: Map<string, Set<string>>;
}

/** Reads the "Domain folders and their public files" section of ARCHITECTURE.md. */
function readDomainSurface(markdown: string): DomainSurface {
  const section = markdown.split(/^## Domain folders and their public files$/m)[1]?.split(/^## /m)[0] ?? "";
  const sharedParagraph = section.split(/^The shared folders/m)[1]?.split(/\n\n/)[0] ?? "";
  const shared = new Set([...sharedParagraph.matchAll(/`lib\/([a-z-]+)`/g)].map((match) => match[1]!));
  const publicFiles = new Map(
    [...section.matchAll(/^\| `lib\/([a-z-]+)` \| (.*) \|$/gm)].map((match) => [
      match[1]!,
      new Set([...match[2]!.matchAll(/`([a-z0-9/-]+)`/g)].map((name) => name[1]!)),
    ]),
  );
  return { shared, publicFiles };
}

/** The project-relative target of `specifier` imported by `file`, without extension; null for a package. */
function importTarget(file: string, specifier: string): string | null {
  if (specifier.startsWith("@/")) return specifier.slice(2).replace(/\.tsx?$/, "");
  if (specifier.startsWith(".")) return join(dirname(file), specifier).replace(/\.tsx?$/, "");
  return null;
}

/**
 * Why `file` may not import `specifier` (null: allowed): the target is a file inside another domain folder of lib/
 * that is neither its index nor one of its public files.
 */
function domainImportViolation(file: string, specifier: string, surface: DomainSurface): string | null {
  const target = importTarget(file, specifier);
  const [root, folder, ...rest] = (target ?? "").split("/");
  const name = rest.join("/");
  if (root !== "lib" || folder === undefined || name === "") return null;
  if (folder === "ledger" || surface.shared.has(folder)) return null;
  if (file.startsWith(`lib/${folder}/`) || !file.startsWith("lib/")) return null;
  if (name === "index" || surface.publicFiles.get(folder)?.has(name)) return null;
  return `lib/${folder}/${name} is internal to lib/${folder} (not in ARCHITECTURE.md's public files)`;
}

describe("domain folders' boundaries", () => {
  const surface = readDomainSurface(readFileSync("ARCHITECTURE.md", "utf8"));

  it("ARCHITECTURE.md's table names shared folders and public files that exist", () => {
    expect(surface.shared.size).toBeGreaterThan(3);
    expect(surface.publicFiles.get("topups")?.has("settle-topup")).toBe(true);
    const missing = [
      ...[...surface.shared].filter((folder) => !statSync(join("lib", folder), { throwIfNoEntry: false })),
      ...[...surface.publicFiles].flatMap(([folder, names]) =>
        [...names]
          .filter((name) => !statSync(join("lib", folder, `${name}.ts`), { throwIfNoEntry: false }))
          .map((name) => `lib/${folder}/${name}.ts`),
      ),
    ];
    expect(missing).toEqual([]);
  });

  it("no lib/ folder imports another domain folder's internal files", () => {
    const violations = files("lib").flatMap((file) =>
      importSpecifiers(readFileSync(file, "utf8")).flatMap((specifier) => {
        const why = domainImportViolation(file, specifier, surface);
        return why ? [`${file}: imports ${specifier}: ${why}`] : [];
      }),
    );
    expect(violations).toEqual([]);
  });

  it("the check bites on an internal file and lets the public ones through (negative controls)", () => {
    const fake: DomainSurface = {
      shared: new Set(["http"]),
      publicFiles: new Map([["topups", new Set(["settle-topup"])]]),
    };
    expect(domainImportViolation("lib/reconciler/x.ts", "../topups/create-topup", fake)).toMatch(/internal/);
    expect(domainImportViolation("lib/admin/x.ts", "@/lib/payments/create-payment", fake)).toMatch(/internal/);
    expect(domainImportViolation("lib/admin/x.ts", "../topups/settle-topup", fake)).toBeNull();
    expect(domainImportViolation("lib/admin/x.ts", "../topups", fake)).toBeNull();
    expect(domainImportViolation("lib/admin/x.ts", "../topups/index", fake)).toBeNull();
    expect(domainImportViolation("lib/admin/x.ts", "../topups/checks/scope", fake)).toMatch(/internal/);
    const nested: DomainSurface = { shared: new Set(), publicFiles: new Map([["audit", new Set(["checks/scope"])]]) };
    expect(domainImportViolation("lib/admin/x.ts", "../audit/checks/scope", nested)).toBeNull();
    expect(domainImportViolation("lib/topups/x.ts", "./create-topup", fake)).toBeNull();
    expect(domainImportViolation("lib/admin/x.ts", "../http/respond", fake)).toBeNull();
    expect(domainImportViolation("lib/admin/x.ts", "../ledger", fake)).toBeNull();
    expect(domainImportViolation("app/page.tsx", "@/lib/topups/create-topup", fake)).toBeNull();
    const read = readDomainSurface(
      "## Domain folders and their public files\n\nThe shared folders: `lib/http`, `lib/bank`.\n\n" +
        "| folder | public files |\n|---|---|\n| `lib/topups` | `settle-topup`, `list-topups` |\n\n## Next\n| `lib/x` | `y` |\n",
    );
    expect([...read.shared]).toEqual(["http", "bank"]);
    expect([...read.publicFiles.keys()]).toEqual(["topups"]);
    expect([...read.publicFiles.get("topups")!]).toEqual(["settle-topup", "list-topups"]);
  });
});
