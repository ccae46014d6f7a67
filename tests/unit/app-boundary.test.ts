/**
 * Transport stays thin: no file under app/ imports the database or Redis clients, or
 * contains SQL. Route handlers and server actions parse, call lib/, and map the outcome.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
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
