/**
 * The repository explains itself: every reference in a tracked file can be followed with the repository alone.
 *  - No tracked source or document cites an issue number, the planning notes or a document kept outside the
 *    repository (OUTSIDE_REFERENCE below; built from pieces so that this file does not match itself).
 *  - Every "contract section N" (or N.M) resolves to a heading of docs/contract.md, every
 *    "docs/development.md note N" to a note of docs/development.md, every "docs/decisions/NNN" to a record.
 *  - Every case id a test names (C01...) has its line in docs/cases.md, and every file a line there names exists
 *    and mentions the id.
 * The finders are pure functions; the first tests feed them known-bad text (the negative controls).
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { projectRoot } from "../../scripts/lib/stack";

/** What a maintainer could not follow: planning notes and documents outside the repository. */
const OUTSIDE_REFERENCE = new RegExp(
  ["issue [0-9]+", ["stack", "notes"].join("-"), ["kept", "beside this repository"].join(" "), "\\.\\./shared"].join(
    "|",
  ),
  "i",
);
/** One line of each kind OUTSIDE_REFERENCE must find, assembled at run time for the same reason. */
const OUTSIDE_SAMPLES = [
  `// see ${"issue"} 12 item 3`,
  `(${["stack", "notes"].join("-")} 15)`,
  `${[".", "."].join("")}/shared/docs/contract.md`,
  `the contract is kept ${"beside"} this repository`,
];
/** Text, not binary: no NUL byte (PNG images and other binaries have them; source and documents never do). */
function isText(bytes: Buffer): boolean {
  return !bytes.includes(0);
}

/**
 * Every tracked text file, whatever its type (.ts, .md, .sql, .prisma, .sh, .svg, .env.example, .gitignore,
 * .ci/run...): a rule that listed extensions would miss the next new one. node_modules and generated/ are never
 * tracked; binaries are left out by {@link isText}.
 */
function trackedFiles(): string[] {
  const listed = execFileSync("git", ["ls-files", "-z"], { cwd: projectRoot }).toString().split("\0");
  return listed.filter(
    (path) =>
      path !== "" &&
      !path.startsWith("node_modules/") &&
      !path.startsWith("generated/") &&
      existsSync(join(projectRoot, path)) &&
      isText(readFileSync(join(projectRoot, path))),
  );
}

/** `file:line: text` for each line of `text` that cites something outside the repository. */
function outsideReferences(file: string, text: string): string[] {
  return text
    .split("\n")
    .flatMap((line, index) => (OUTSIDE_REFERENCE.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : []));
}

/**
 * The section numbers a text cites: "contract section 4", "contract sections 2, 5 and 7.5",
 * "Contract section 7.2," (case-insensitive). Returns them as written ("4", "7.5").
 */
function citedContractSections(text: string): string[] {
  const cited: string[] = [];
  for (const match of text.matchAll(
    /contract,? sections? ((?:\d+(?:\.\d+)?)(?:(?:, | and | or |-)\d+(?:\.\d+)?)*)/gi,
  )) {
    cited.push(...match[1]!.split(/, | and | or |-/));
  }
  return cited;
}

/** The note numbers a text cites as "docs/development.md note 15" or "docs/development.md notes 26-29". */
function citedDevelopmentNotes(text: string): number[] {
  const cited: number[] = [];
  for (const match of text.matchAll(/docs\/development\.md,? notes? (\d+(?:(?:, | and |-)\d+)*)/g)) {
    const parts = match[1]!.split(/, | and /);
    for (const part of parts) {
      const [from, to] = part.split("-").map(Number);
      for (let n = from!; n <= (to ?? from!); n++) cited.push(n);
    }
  }
  return cited;
}

/** Section numbers of docs/contract.md's headings: "## 4. HTTP API" gives "4", "### 7.2 One row..." gives "7.2". */
function contractHeadings(markdown: string): Set<string> {
  return new Set([...markdown.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)].map((match) => match[1]!));
}

const contract = readFileSync(join(projectRoot, "docs", "contract.md"), "utf8");
const development = readFileSync(join(projectRoot, "docs", "development.md"), "utf8");
const casesDoc = readFileSync(join(projectRoot, "docs", "cases.md"), "utf8");

describe("the finders catch what they must (negative controls)", () => {
  it("a binary file is left out, a text file of any type is read", () => {
    expect(isText(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00]))).toBe(false);
    expect(isText(Buffer.from(`model User { // ${OUTSIDE_SAMPLES[0]}\n}`))).toBe(true);
  });

  it("an issue number, the planning notes and a path outside the repository are outside references", () => {
    const text = ["ok line", ...OUTSIDE_SAMPLES].join("\n");
    expect(outsideReferences("x.ts", text).map((hit) => hit.split(":")[1])).toEqual(["2", "3", "4", "5"]);
    expect(outsideReferences("x.ts", "an issue of timing; 12 issues")).toEqual([]);
  });

  it("every form of a contract citation is read, and a section docs/contract.md lacks is found", () => {
    expect(
      citedContractSections(`(contract sections 2, 5 and 7.5; Contract section 9: x) contract ${"section"} 11`),
    ).toEqual(["2", "5", "7.5", "9", "11"]);
    const headings = contractHeadings("## 1. One\n### 7.1 Balances\n");
    expect([...headings]).toEqual(["1", "7.1"]);
    expect(headings.has("11")).toBe(false);
  });

  it("note ranges and lists of docs/development.md are read", () => {
    expect(citedDevelopmentNotes("docs/development.md notes 26-28, docs/development.md notes 3, 13 and 19")).toEqual([
      26, 27, 28, 3, 13, 19,
    ]);
  });
});

describe("every reference in the repository resolves inside it", () => {
  const files = trackedFiles();
  const texts = new Map(files.map((file) => [file, readFileSync(join(projectRoot, file), "utf8")]));

  it("reads a tracked tree (the rule cannot pass on an empty list)", () => {
    expect(files.length).toBeGreaterThan(100);
    for (const file of [".ci/run", "prisma/schema.prisma", ".env.example", ".gitignore"]) expect(files).toContain(file);
    expect(files.some((file) => file.startsWith("prisma/migrations/"))).toBe(true);
    expect(files.some((file) => file.endsWith(".png"))).toBe(false);
  });

  it('no tracked file cites "issue N", the planning notes or documents outside the repository', () => {
    const hits = [...texts].flatMap(([file, text]) => outsideReferences(file, text));
    expect(hits).toEqual([]);
  });

  it("every contract section cited resolves to a heading of docs/contract.md", () => {
    const headings = contractHeadings(contract);
    for (const n of ["1", "2", "3", "4", "5", "6", "7", "8", "9"]) expect(headings, `section ${n}`).toContain(n);
    const unresolved = [...texts].flatMap(([file, text]) =>
      citedContractSections(text)
        .filter((section) => !headings.has(section))
        .map((section) => `${file}: contract section ${section}`),
    );
    expect(unresolved).toEqual([]);
  });

  it("every docs/development.md note cited exists", () => {
    const notes = new Set([...development.matchAll(/^### (\d+)\. /gm)].map((match) => Number(match[1])));
    const unresolved = [...texts].flatMap(([file, text]) =>
      citedDevelopmentNotes(text)
        .filter((note) => !notes.has(note))
        .map((note) => `${file}: docs/development.md note ${note}`),
    );
    expect(unresolved).toEqual([]);
  });

  it("every docs/decisions/NNN cited is a decision record", () => {
    const records = readdirSync(join(projectRoot, "docs", "decisions"));
    const unresolved = [...texts].flatMap(([file, text]) =>
      [...text.matchAll(/docs\/decisions\/(\d{3})/g)]
        .map((match) => match[1]!)
        .filter((number) => !records.some((record) => record.startsWith(`${number}-`)))
        .map((number) => `${file}: docs/decisions/${number}`),
    );
    expect(unresolved).toEqual([]);
  });
});

describe("decision records", () => {
  const dir = join(projectRoot, "docs", "decisions");
  const records = readdirSync(dir).filter((name) => name.endsWith(".md"));

  it("each carries a Date and a Status line under its title", () => {
    expect(records.length).toBeGreaterThan(10);
    const missing = records.filter((name) => {
      const head = readFileSync(join(dir, name), "utf8").split("\n").slice(0, 6).join("\n");
      return (
        !/^- Date: \d{4}-\d{2}-\d{2}$/m.test(head) ||
        !/^- Status: (Proposed|Accepted|Superseded|Deprecated)\b/m.test(head)
      );
    });
    expect(missing).toEqual([]);
  });
});

describe("docs/cases.md lists every case the tests name", () => {
  const rows = new Map(
    [...casesDoc.matchAll(/^\| (C\d\d) \|.*\| ([^|]+) \|$/gm)].map((match) => [
      match[1]!,
      [...match[2]!.matchAll(/`([^`]+)`/g)].map((file) => file[1]!),
    ]),
  );
  const testFiles = [...new Set(trackedFiles())].filter((file) => /^(tests|e2e)\/.*\.(test|spec)\.ts$/.test(file));
  const namedInTests = new Set(
    testFiles.flatMap((file) =>
      [...readFileSync(join(projectRoot, file), "utf8").matchAll(/\bC\d\d\b/g)].map((m) => m[0]),
    ),
  );

  it("has a line for each case id a test names", () => {
    expect(namedInTests.size).toBeGreaterThan(10);
    expect([...namedInTests].filter((id) => !rows.has(id)).sort()).toEqual([]);
  });

  it("names, for each case, test files that exist and mention the id", () => {
    const wrong: string[] = [];
    for (const [id, files] of rows) {
      if (files.length === 0) wrong.push(`${id}: no test named`);
      for (const file of files) {
        const path = join(projectRoot, file);
        if (!existsSync(path)) wrong.push(`${id}: ${file} does not exist`);
        else if (!new RegExp(`\\b${id}\\b`).test(readFileSync(path, "utf8")))
          wrong.push(`${id}: ${file} never names it`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
