/**
 * The API's text of money and times, written by two languages: lib/money.ts `formatMinor` and the `toISOString` of a
 * row's time read through pg in TypeScript, and the database functions ledger_minor_text and ledger_iso_ms for the
 * bodies a deciding function fills in the statement that decides (a payment's debt, a reward's or payment's time:
 * docs/decisions/053). A stored body and a view of the same row must print the same text, so the two are compared
 * here on the edges where they could part: one and two digits of minor units, 2^53 - 1, and times whose microseconds
 * round up to the next millisecond, even the next day (the rows' times are timestamptz(3), which rounds, as the body's
 * time must). Negative controls: a copy of ledger_iso_ms that truncates to the millisecond, and a copy of
 * ledger_minor_text without the zero padding, both from their files, each disagree.
 */
import { describe, expect, it } from "vitest";
import { formatMinor } from "@/lib/money";
import { testPool } from "../helpers/db";
import { functionDefinition } from "../helpers/function-files";

const AMOUNTS_MINOR = [0, 1, 9, 10, 99, 100, 101, 1_000, 12_345, 99_999_999, Number.MAX_SAFE_INTEGER];

/** Times as PostgreSQL holds them (microseconds), among them ones whose fraction is past the half millisecond. */
const TIMES = [
  "2026-12-01 23:59:59.999999+00",
  "2026-12-01 23:59:59.999500+00",
  "2026-01-01 00:00:00.000499+00",
  "2026-06-15 12:34:56.789600+00",
  "2026-06-15 12:34:56+00",
  "2024-02-29 08:00:00.5+00",
];

/** What `name` (ledger_minor_text or ledger_iso_ms, or a copy) prints for each amount, and the view's text. */
async function minorTexts(name: string): Promise<Array<{ sql: string; ts: string }>> {
  const { rows } = await testPool().query<{ text: string }>(
    `SELECT ${name}(a) AS text FROM unnest($1::bigint[]) WITH ORDINALITY AS t(a, n) ORDER BY n`,
    [AMOUNTS_MINOR],
  );
  return rows.map((row, i) => ({ sql: row.text, ts: formatMinor(AMOUNTS_MINOR[i]!) }));
}

/**
 * What `name` prints for each time, beside the time as a view prints it: held in a row's timestamptz(3) column, read
 * through pg, written by toISOString.
 */
async function isoTexts(name: string): Promise<Array<{ sql: string; ts: string }>> {
  const { rows } = await testPool().query<{ text: string; at: Date }>(
    `SELECT ${name}(a) AS text, a::timestamptz(3) AS at FROM unnest($1::timestamptz[]) WITH ORDINALITY AS t(a, n) ORDER BY n`,
    [TIMES],
  );
  return rows.map((row) => ({ sql: row.text, ts: row.at.toISOString() }));
}

/** A copy of `name`'s file, named `copy`, with `from` replaced by `to` (which must occur). */
async function brokenCopy(name: string, copy: string, from: string, to: string): Promise<void> {
  const definition = functionDefinition(name);
  expect(definition, `${from} is in ${name}'s file`).toContain(from);
  await testPool().query(definition.replace(`FUNCTION ${name}(`, `FUNCTION ${copy}(`).replace(from, to));
}

describe("money and times: the database's text is the TypeScript text", () => {
  it("ledger_minor_text prints every amount as formatMinor does", async () => {
    for (const { sql, ts } of await minorTexts("ledger_minor_text")) expect(sql).toBe(ts);
  });

  it("ledger_iso_ms prints every time as the row's time read through pg prints with toISOString", async () => {
    for (const { sql, ts } of await isoTexts("ledger_iso_ms")) expect(sql).toBe(ts);
  });

  it("negative control: a copy of ledger_iso_ms that truncates to the millisecond disagrees on a fraction past the half", async () => {
    await brokenCopy("ledger_iso_ms", "iso_ms_truncating", "p_at::timestamptz(3)", "date_trunc('milliseconds', p_at)");
    try {
      const texts = await isoTexts("iso_ms_truncating");
      expect(texts.filter(({ sql, ts }) => sql !== ts).map(({ ts }) => ts)).toContain("2026-12-02T00:00:00.000Z");
    } finally {
      await testPool().query("DROP FUNCTION IF EXISTS iso_ms_truncating(timestamptz)");
    }
  });

  it("negative control: a copy of ledger_minor_text without the zero padding disagrees on one digit of minor units", async () => {
    await brokenCopy(
      "ledger_minor_text",
      "minor_text_unpadded",
      "lpad((p_minor % 100)::text, 2, '0')",
      "(p_minor % 100)::text",
    );
    try {
      const texts = await minorTexts("minor_text_unpadded");
      expect(texts.filter(({ sql, ts }) => sql !== ts).map(({ ts }) => ts)).toContain("0.01");
    } finally {
      await testPool().query("DROP FUNCTION IF EXISTS minor_text_unpadded(bigint)");
    }
  });
});
