/**
 * Scenarios of the statement's tests (tests/integration/statement.test.ts) and their negative controls
 * (tests/integration/statement-control.test.ts): each builds a user's books through the request path and asserts
 * what the statement, its CSV or its paging must show, so that a control can run the same assertion with one guard
 * removed and watch it fail. Not a test file (no `.test.ts`).
 */
import { parse } from "csv-parse/sync";
import { expect } from "vitest";
import { createPayment } from "@/lib/payments/create-payment";
import { readStatement } from "@/lib/wallet/read-statement";
import { streamStatementCsv } from "@/lib/wallet/stream-statement-csv";
import type { StatementPosting, StatementRange } from "@/lib/wallet/statement-posting";
import { createTestUser, testPool } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { topUp } from "./chargeback-fixtures";

const DAY_MS = 86_400_000;

/** Yesterday to tomorrow in UTC days: every posting a test makes now, whatever the time of day. */
export function rangeAroundNow(): StatementRange {
  const day = (offset: number) => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);
  return { from: day(-1), to: day(1) };
}

/** A payment through the request path with a payee and a note; throws unless it succeeded. */
export async function payTo(userId: string, amountMinor: number, payee: string, note?: string): Promise<void> {
  const result = await createPayment({
    userId,
    orderId: freshRefId("order"),
    amountMinor,
    currency: "USD",
    payee,
    ...(note === undefined ? {} : { note }),
  });
  if (result.kind !== "response" || result.response.status !== 201) throw new Error(JSON.stringify(result));
}

/** Every line of the user's statement for `range`, walked page by page with `limit`. */
export async function allLines(userId: string, range: StatementRange, limit: number): Promise<StatementPosting[]> {
  const lines: StatementPosting[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await readStatement(userId, { ...range, limit, ...(cursor === undefined ? {} : { cursor }) });
    if (!page.ok) throw new Error(page.detail);
    lines.push(...page.lines);
    if (page.nextCursor === null) return lines;
    cursor = page.nextCursor;
  }
}

/** The whole CSV export of the user's statement, as text (the stream read to its end; the byte order mark kept). */
export async function csvText(userId: string, range: StatementRange): Promise<string> {
  const csv = await streamStatementCsv(userId, range);
  return Buffer.from(await new Response(csv.body).arrayBuffer()).toString("utf8");
}

/** Payees as the API takes them (readable text) that a spreadsheet or a naive CSV writer would get wrong. */
export const HOSTILE_PAYEES = [
  'Smith, Jones & "Partners"',
  '=HYPERLINK("http://evil.example","Click")',
  "+1 (555) 0100",
  "-2+3+cmd|' /C calc'!A0",
  "@SUM(A1:A9)",
  "Café Zürich 東京 🍰",
] as const;

/**
 * Notes no form accepts (control characters), written into the entries' params directly, as text from an older
 * release or another writer could be: the export must still be right for every row, whatever its text.
 */
export const HOSTILE_NOTES = ['line one\r\nline two, "quoted"', "\t=1+1", "\r=2+2", "plain note"] as const;

/** What a spreadsheet must see for `text`: with a leading `'` when it would start a formula (OWASP). */
export function expectedCell(text: string): string {
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

/**
 * A user who paid each hostile payee (with the hostile notes on the first payments), and what each payment's CSV
 * record must read back as through a real RFC 4180 parser: `[payee cell, note cell]` in time order.
 */
export async function hostileUser(): Promise<{ userId: string; expected: Array<[string, string]> }> {
  const user = await createTestUser();
  await topUp(user.id, freshRefId("csv"), 10_000);
  for (const payee of HOSTILE_PAYEES) await payTo(user.id, 100, payee);
  const notes = await testPool().query<{ id: string }>(
    "SELECT id::text FROM ledger_entries WHERE user_id = $1 AND type = 'payment' ORDER BY id",
    [user.id],
  );
  for (const [i, note] of HOSTILE_NOTES.entries()) {
    await testPool().query(
      "UPDATE ledger_entries SET params = jsonb_set(params, '{note}', to_jsonb($3::text)) WHERE user_id = $1 AND id = $2",
      [user.id, notes.rows[i]!.id, note],
    );
  }
  const expected = HOSTILE_PAYEES.map((payee, i): [string, string] => [
    expectedCell(payee),
    expectedCell(HOSTILE_NOTES[i] ?? ""),
  ]);
  return { userId: user.id, expected };
}

/**
 * The CSV scenario: the export of {@link hostileUser}'s statement, read by csv-parse, has the header, one record of
 * nine cells per posting, each payee and note exactly as {@link expectedCell} says, and no text cell that a
 * spreadsheet would run (amounts are bare decimals, and numbers).
 */
export async function assertHostileCsvRoundTrips(): Promise<void> {
  const { userId, expected } = await hostileUser();
  const text = await csvText(userId, rangeAroundNow());
  expect(text.startsWith("\uFEFF")).toBe(true);
  const records = parse(text, { bom: true, relax_column_count: false }) as string[][];
  expect(records[0]).toEqual([
    "Posted at (UTC)",
    "Reference",
    "Description",
    "Counterparty",
    "Payee",
    "Note",
    "Amount",
    "Balance after",
    "Currency",
  ]);
  const payments = records.slice(2);
  expect(payments.map((record) => [record[4], record[5]])).toEqual(expected);
  expect(payments.map((record) => record[6])).toEqual(HOSTILE_PAYEES.map(() => "-1.00"));
  expect(records[1]!.slice(6)).toEqual(["100.00", "100.00", "USD"]);
  for (const record of records.slice(1)) {
    for (const [column, cell] of record.entries()) {
      if (column === 6 || column === 7) expect(cell).toMatch(/^-?[0-9]+\.[0-9]{2}$/);
      else expect(cell).not.toMatch(/^[=+\-@\t\r]/);
    }
  }
}

/**
 * The paging scenario: a user's five postings all booked at one instant (as the books' migration can book several
 * movements of one transition time), read two at a time, come out once each, in id order: a tie in time is broken
 * by the posting's id, never skipped. Returns the user for more checks.
 */
export async function assertTiedPostingsPage(): Promise<string> {
  const user = await createTestUser();
  await topUp(user.id, freshRefId("tie"), 5000);
  for (const payee of ["One", "Two", "Three", "Four"]) await payTo(user.id, 100, payee);
  const client = await testPool().connect();
  try {
    // The postings are append-only; only this session bypasses the trigger, to stage the tie.
    await client.query("BEGIN");
    await client.query("SET LOCAL session_replication_role = replica");
    await client.query(
      "UPDATE ledger_postings SET posted_at = date_trunc('second', now()) + interval '123456 microseconds' WHERE user_id = $1",
      [user.id],
    );
    await client.query("COMMIT");
  } finally {
    client.release();
  }
  const whole = await allLines(user.id, rangeAroundNow(), 100);
  expect(whole.map((line) => line.counterparty)).toEqual(["Bank", "One", "Two", "Three", "Four"]);
  expect(new Set(whole.map((line) => line.postedAt)).size).toBe(1);
  for (const limit of [1, 2, 3]) expect(await allLines(user.id, rangeAroundNow(), limit)).toEqual(whole);
  return user.id;
}
