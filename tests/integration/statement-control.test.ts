/**
 * Negative controls of the statement's guards (contract section 13.4), kept runnable: the scenarios of
 * tests/integration/statement.test.ts (tests/integration/statement-fixtures.ts) run with one guard removed each, and
 * fail, which is the evidence that they bite.
 * - the CSV writer without the formula neutraliser (lib/wallet/csv-cells.ts `csvRecord` writing text as it is, quoted):
 *   a payee starting with `=`, `+`, `-` or `@` reaches the spreadsheet as a formula;
 * - the CSV writer without quoting (text joined bare): a payee with a comma, or a note with a line break, breaks the
 *   record apart;
 * - the statement's keyset without the posting id as tie-breaker (`posted_at > cursor` alone): postings booked at one
 *   instant are skipped by the next page.
 * Run alone: `npx vitest run --project integration tests/integration/statement-control.test.ts`.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

const control = vi.hoisted(() => ({ neutraliserRemoved: false, quotingRemoved: false, tieBreakRemoved: false }));

vi.mock("../../lib/wallet/csv-cells", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../lib/wallet/csv-cells")>();
  const text = (cell: string) => (control.quotingRemoved ? cell : actual.quoteField(cell));
  return {
    ...actual,
    csvRecord: (cells: Parameters<typeof actual.csvRecord>[0]) => {
      if (!control.neutraliserRemoved && !control.quotingRemoved) return actual.csvRecord(cells);
      const fields = cells.map((cell) =>
        typeof cell === "string"
          ? text(control.neutraliserRemoved ? cell : actual.neutraliseFormula(cell))
          : cell.decimal,
      );
      return `${fields.join(",")}\r\n`;
    },
  };
});

vi.mock("../../lib/wallet/statement-posting", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../lib/wallet/statement-posting")>();
  const keyset = "($4::timestamptz IS NULL OR (p.posted_at, p.id) > ($4::timestamptz, $5::bigint))";
  if (!actual.STATEMENT_POSTINGS_SQL.includes(keyset))
    throw new Error("the statement's keyset changed: update this control");
  return {
    ...actual,
    get STATEMENT_POSTINGS_SQL() {
      if (!control.tieBreakRemoved) return actual.STATEMENT_POSTINGS_SQL;
      return actual.STATEMENT_POSTINGS_SQL.replace(
        keyset,
        "($4::timestamptz IS NULL OR (p.posted_at > $4::timestamptz AND $5::bigint IS NOT NULL))",
      );
    },
  };
});

import { assertHostileCsvRoundTrips, assertTiedPostingsPage } from "./statement-fixtures";
import { startTestBank, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank({ settleDelayMs: 30 });
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

describe("each statement guard, removed, fails its scenario", () => {
  it("with the guards in place the scenarios pass (the controls below are not failing for another reason)", async () => {
    await assertHostileCsvRoundTrips();
    await assertTiedPostingsPage();
  });

  it("without the neutraliser, a formula reaches the spreadsheet", async () => {
    control.neutraliserRemoved = true;
    try {
      await expect(assertHostileCsvRoundTrips()).rejects.toThrow();
    } finally {
      control.neutraliserRemoved = false;
    }
  });

  it("without quoting, a comma or a line break in a payee or note breaks the records", async () => {
    control.quotingRemoved = true;
    try {
      await expect(assertHostileCsvRoundTrips()).rejects.toThrow();
    } finally {
      control.quotingRemoved = false;
    }
  });

  it("without the id as tie-breaker, the next page skips postings booked at the same instant", async () => {
    control.tieBreakRemoved = true;
    try {
      await expect(assertTiedPostingsPage()).rejects.toThrow(/expected/);
    } finally {
      control.tieBreakRemoved = false;
    }
  });
});
