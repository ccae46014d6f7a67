/**
 * Every earlier checksum that lib/migrate.ts accepts for an applied migration (EARLIER_CHECKSUMS) belongs to a
 * version of that file in git history whose statements are the current file's: only `--` comment lines differ.
 * So a database that applied the earlier version holds exactly the schema the current file builds. Negative
 * control: add any 64-hex checksum to an entry (or change a statement in an earlier-listed file) and this fails.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { relative } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_MIGRATIONS_DIR, EARLIER_CHECKSUMS, readMigrationFiles } from "../../lib/migrate";
import { projectRoot } from "../../scripts/lib/stack";

function git(args: string[]): Buffer {
  return execFileSync("git", args, { cwd: projectRoot, maxBuffer: 64 * 1024 * 1024 });
}

/** The file's lines without whole-line `--` comments and trailing blanks: what PostgreSQL executes. */
function statementsOf(sql: string): string {
  return sql
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("--"))
    .map((line) => line.trimEnd())
    .join("\n")
    .trim();
}

/** Every version of `path` in git history (all refs reachable from HEAD), by SHA-256 of its bytes. */
function versionsInHistory(path: string): Map<string, string> {
  const versions = new Map<string, string>();
  const commits = git(["log", "--format=%H", "--", path]).toString().split("\n").filter(Boolean);
  for (const commit of commits) {
    let bytes: Buffer;
    try {
      bytes = git(["show", `${commit}:${path}`]);
    } catch {
      continue; // the commit deleted the file
    }
    versions.set(createHash("sha256").update(bytes).digest("hex"), bytes.toString("utf8"));
  }
  return versions;
}

describe("earlier checksums of applied migrations (comment-only edits)", () => {
  const files = new Map(readMigrationFiles().map((file) => [file.name, file]));

  it("name only migrations that exist, with well-formed checksums other than the current one", () => {
    for (const [name, checksums] of Object.entries(EARLIER_CHECKSUMS)) {
      const file = files.get(name);
      expect(file, `${name} has no folder under ${DEFAULT_MIGRATIONS_DIR}`).toBeDefined();
      for (const checksum of checksums) {
        expect(checksum).toMatch(/^[0-9a-f]{64}$/);
        expect(checksum, `${name}: the current checksum needs no entry`).not.toBe(file!.checksum);
      }
    }
  });

  for (const [name, checksums] of Object.entries(EARLIER_CHECKSUMS)) {
    it(`${name}: each earlier checksum is a version in git history with the same statements`, () => {
      const file = files.get(name)!;
      const path = relative(projectRoot, file.path);
      const versions = versionsInHistory(path);
      for (const checksum of checksums) {
        const earlier = versions.get(checksum);
        expect(earlier, `no version of ${path} in git history has sha256 ${checksum}`).toBeDefined();
        expect(statementsOf(earlier!)).toBe(statementsOf(file.sql));
      }
    });
  }
});
