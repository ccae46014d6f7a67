/**
 * The details lib/ writes on ledger rows, transitions and webhook records are read by admins on the timelines and
 * under "Needs attention", so they are sentences without the API's words for programmers (e2e/jargon.ts), like every
 * other page (e2e/plain-words.spec.ts). That spec meets a detail only when its run happens to produce one (a CI run
 * found "the key was already cancelled at the bank" on a timeline, after the reconciler expired a slow top-up), so
 * this test reads every string literal of the folders that write them. Lines that only log, throw or describe the
 * API (OpenAPI `.meta`, a `description` and the line after it) are not shown to admins and are skipped, as are the request parsers, whose
 * words are the API's problem details for programmers.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { jargonIn } from "../../e2e/jargon";

/** The folders whose code writes transition details, anomaly details and webhook outcomes' details. */
const DETAIL_WRITERS = [
  "lib/reconciler",
  "lib/webhooks",
  "lib/topups",
  "lib/refunds",
  "lib/payouts",
  "lib/chargebacks",
  "lib/transfers",
  "lib/admin",
];
/** The API's request parsers: their words are problem details for programmers (contract section 3). */
const API_WORDS = /-request\.ts$/;
const NOT_FOR_ADMINS = /log\(\)|\bthrow\b|Error\(|\.meta\(|\bdescription\b|^\s*(\*|\/\/|\/\*|import\b)/;
const LITERAL = /"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g;

/** "file:line: literal" for each string literal of `source` (outside skipped lines) holding jargon. */
function jargonLiterals(file: string, source: string): string[] {
  const lines = source.split("\n");
  return lines.flatMap((line, index) => {
    // A description's text may continue on the lines after `description:`.
    if (NOT_FOR_ADMINS.test(line) || /\bdescription:\s*$/.test(lines[index - 1] ?? "")) return [];
    // The code inside a template's ${...} is not words: JSON.stringify(x) says nothing to the reader.
    const literals = (line.match(LITERAL) ?? []).map((literal) => literal.replace(/\$\{[^}]*\}/g, "…"));
    return literals.filter((literal) => jargonIn(literal).length > 0).map((l) => `${file}:${index + 1}: ${l}`);
  });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts") && !API_WORDS.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe("the details admins read are free of programmers' words", () => {
  it("no string literal of the detail writers holds one", () => {
    const found = DETAIL_WRITERS.flatMap(sourceFiles).flatMap((file) =>
      jargonLiterals(file, readFileSync(file, "utf8")),
    );
    expect(found).toEqual([]);
  });

  it("negative control: the detail a CI run showed on a timeline is found, in either kind of literal", () => {
    const source = [
      'detail: "reconciler: the key was already cancelled at the bank",',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text holding a template literal, on purpose
      "  return `bank refund ${refundId} belongs to another key`;",
      '  log().warn({ eventId }, "bank webhook anomaly: unknown refund key");',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: source text holding a template literal, on purpose
      "  detail: `the adjustment already credits ${JSON.stringify(params)}`,",
    ].join("\n");
    expect(jargonLiterals("example.ts", source)).toEqual([
      'example.ts:1: "reconciler: the key was already cancelled at the bank"',
      "example.ts:2: `bank refund … belongs to another key`",
    ]);
  });
});
