/**
 * A small reader of prisma/schema.prisma: models, their table names, scalar fields (column name, Prisma type,
 * optional or not) and unique constraints, enough to compare the Prisma schema with the live database.
 * Relation fields (whose type is another model) are skipped.
 */
import { readFileSync } from "node:fs";

export interface PrismaField {
  name: string;
  column: string;
  type: string;
  optional: boolean;
  list: boolean;
}

export interface PrismaModel {
  name: string;
  table: string;
  fields: PrismaField[];
  /** Column lists of @id/@@id, @unique and @@unique, in order. */
  uniques: string[][];
}

export function readPrismaModels(path = "prisma/schema.prisma"): PrismaModel[] {
  const text = readFileSync(path, "utf8");
  const blocks = [...text.matchAll(/^model\s+(\w+)\s*\{([\s\S]*?)^\}/gm)];
  const modelNames = new Set(blocks.map((b) => b[1]!));
  return blocks.map(([, name, body]) => {
    const lines = body!
      .split("\n")
      .map((l) => l.replace(/\/\/.*$/, "").trim())
      .filter(Boolean);
    const table = /@@map\("([^"]+)"\)/.exec(body!)?.[1] ?? name!;
    const fields: PrismaField[] = [];
    const uniques: string[][] = [];
    const columnOf = new Map<string, string>();
    for (const line of lines) {
      if (line.startsWith("@@")) continue;
      const match = /^(\w+)\s+(\w+)(\[\])?(\?)?(.*)$/.exec(line);
      if (!match) continue;
      const [, fieldName, type, list, optional, rest] = match;
      if (modelNames.has(type!)) continue;
      const column = /@map\("([^"]+)"\)/.exec(rest!)?.[1] ?? fieldName!;
      columnOf.set(fieldName!, column);
      fields.push({ name: fieldName!, column, type: type!, optional: Boolean(optional), list: Boolean(list) });
      if (/@id\b|@unique\b/.test(rest!)) uniques.push([column]);
    }
    for (const line of lines) {
      const compound = /^@@(?:id|unique)\(\[([^\]]+)\]/.exec(line);
      if (compound)
        uniques.push(compound[1]!.split(",").map((f) => columnOf.get(f.trim().replace(/\(.*\)$/, "")) ?? f.trim()));
    }
    return { name: name!, table, fields, uniques };
  });
}

/** PostgreSQL `data_type` (information_schema) each Prisma scalar type maps to in this project's SQL. */
export const POSTGRES_TYPES: Record<string, string[]> = {
  String: ["text"],
  Int: ["integer", "smallint"],
  BigInt: ["bigint"],
  Boolean: ["boolean"],
  DateTime: ["timestamp with time zone"],
  Json: ["jsonb"],
};
