/**
 * What people see of the books (contract section 13.4; docs/decisions/058), on a real PostgreSQL, Redis and sandbox
 * bank: the statement's running balances and counter-parties across a top-up, a payment, a lost dispute into debt
 * and its repayment; the balance at an instant exactly at, between and before postings; the CSV export of hostile
 * text read back by a real CSV parser (csv-parse); paging through postings tied in time. The negative controls of
 * these guards are in tests/integration/statement-control.test.ts.
 */
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getWallet } from "@/lib/wallet/get-wallet";
import { csvRecord } from "@/lib/wallet/csv-cells";
import { readBalanceAt } from "@/lib/wallet/read-balance-at";
import { readStatement } from "@/lib/wallet/read-statement";
import { isoMicros, microsOf, STATEMENT_POSTINGS_SQL, WALLET_ACCOUNT_AT_SQL } from "@/lib/wallet/statement-posting";
import { createTestUser, testPool } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { bankDisputeOf, deliver, disputeEventBodies, topUp } from "./chargeback-fixtures";
import { startTestBank, type TestBank } from "./reconciler-fixtures";
import {
  allLines,
  assertHostileCsvRoundTrips,
  assertTiedPostingsPage,
  csvText,
  payTo,
  rangeAroundNow,
} from "./statement-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank({ settleDelayMs: 30 });
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

/** A user with a top-up of 5000 (disputed and lost), a payment of 4000, the dispute into debt, a repayment of 6000. */
async function userThroughDebt(): Promise<string> {
  const user = await createTestUser();
  const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-stmt"), 5000);
  await payTo(user.id, 4000, "Corner Coffee", "beans");
  await bankDisputeOf(bank.url, merchantRef, "lost");
  for (const body of await disputeEventBodies(bank.url, merchantRef)) await deliver(body);
  await topUp(user.id, freshRefId("repay"), 6000);
  return user.id;
}

/** The instant one microsecond before `postedAt`. */
function justBefore(postedAt: string): string {
  return isoMicros(microsOf(postedAt) - 1n);
}

describe("the statement", () => {
  it("shows each posting with its counter-party, signed amount and running balance, into a debt and out of it", async () => {
    const userId = await userThroughDebt();
    const page = await readStatement(userId, { ...rangeAroundNow() });
    if (!page.ok) throw new Error(page.detail);
    expect(page.openingBalance).toBe(0);
    expect(page.nextCursor).toBeNull();
    expect(
      page.lines.map((l) => [l.kind, l.description, l.counterparty, l.counterpartyAccount, l.amount, l.balanceAfter]),
    ).toEqual([
      ["topup", "Top-up", "Bank", "bank_clearing", 5000, 5000],
      ["payment", "Payment", "Corner Coffee", "merchants_payable", -4000, 1000],
      // The dispute takes 5000 from an account of 1000: the account is 4000 below zero, a debt of 4000.
      ["chargeback", "Dispute lost", "Bank", "bank_clearing", -5000, -4000],
      ["topup", "Top-up", "Bank", "bank_clearing", 6000, 2000],
    ]);
    expect(page.lines[1]).toMatchObject({ payee: "Corner Coffee", note: "beans", currency: "USD" });
    expect(page.lines.every((l) => /^[A-Z]{2}-[0-9A-Z]{4}-[0-9A-Z]{4}$/.test(l.reference))).toBe(true);
    expect(page.lines.map((l) => l.postedAt).every((t) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(t))).toBe(
      true,
    );
    // The last running balance is the wallet now.
    expect(await getWallet(userId)).toEqual({ balance: 2000, currency: "USD" });
  });

  it("answers the balance at an instant: exactly at a posting, just before it, between two, before the first", async () => {
    const userId = await userThroughDebt();
    const lines = await allLines(userId, rangeAroundNow(), 100);
    expect(await readBalanceAt(userId, justBefore(lines[0]!.postedAt))).toEqual({
      balance: 0,
      currency: "USD",
      at: justBefore(lines[0]!.postedAt),
    });
    const seen: unknown[] = [];
    for (const [i, line] of lines.entries()) {
      // At the posting's own microsecond it counts; one microsecond before, the previous running balance holds.
      const at = await readBalanceAt(userId, line.postedAt);
      const before = await readBalanceAt(userId, justBefore(line.postedAt));
      seen.push([at.balance, at.debt, before.balance, before.debt]);
      expect(before.balance - (before.debt ?? 0)).toBe(i === 0 ? 0 : lines[i - 1]!.balanceAfter);
    }
    expect(seen).toEqual([
      [5000, undefined, 0, undefined],
      [1000, undefined, 5000, undefined],
      [0, 4000, 1000, undefined],
      [2000, undefined, 0, 4000],
    ]);
    // Between the chargeback and the repayment (the midpoint), and in another offset's words for the same instant.
    const middle = (microsOf(lines[2]!.postedAt) + microsOf(lines[3]!.postedAt)) / 2n;
    expect(await readBalanceAt(userId, isoMicros(middle))).toMatchObject({ balance: 0, debt: 4000 });
    const shifted = new Date(Number(microsOf(lines[3]!.postedAt) / 1000n) + 2 * 3_600_000).toISOString().slice(0, 19);
    const microsText = lines[3]!.postedAt.slice(19, 26);
    expect(await readBalanceAt(userId, `${shifted}${microsText}+02:00`)).toMatchObject({ balance: 2000 });
    expect(await readBalanceAt(userId, "1970-01-01T00:00:00Z")).toEqual({
      balance: 0,
      currency: "USD",
      at: "1970-01-01T00:00:00Z",
    });
  });

  it("keeps to its range and its user: the opening balance carries what came before; another user sees nothing", async () => {
    const userId = await userThroughDebt();
    const tomorrow = rangeAroundNow().to;
    const later = await readStatement(userId, { from: tomorrow, to: tomorrow });
    expect(later).toMatchObject({ ok: true, openingBalance: 2000, lines: [], nextCursor: null });
    const stranger = await createTestUser();
    expect(await readStatement(stranger.id, rangeAroundNow())).toMatchObject({
      ok: true,
      openingBalance: 0,
      lines: [],
    });
    expect(await readBalanceAt(stranger.id, new Date().toISOString())).toMatchObject({ balance: 0 });
    expect(await csvText(stranger.id, rangeAroundNow())).toBe(
      "\uFEFF" +
        '"Posted at (UTC)","Reference","Description","Counterparty","Payee","Note","Amount","Balance after","Currency"\r\n',
    );
  });
});

describe("the statement's pages", () => {
  it("pages through postings tied in time by their id: none skipped, none repeated", async () => {
    await assertTiedPostingsPage();
  });

  it("shows a posting booked while a reader pages on a later page, once", async () => {
    const user = await createTestUser();
    await topUp(user.id, freshRefId("paging"), 5000);
    await payTo(user.id, 100, "First");
    const first = await readStatement(user.id, { ...rangeAroundNow(), limit: 1 });
    if (!first.ok || first.nextCursor === null) throw new Error("expected a next page");
    await payTo(user.id, 200, "Booked meanwhile");
    const rest = await allLines(user.id, rangeAroundNow(), 100);
    const second = await readStatement(user.id, { ...rangeAroundNow(), limit: 5, cursor: first.nextCursor });
    if (!second.ok) throw new Error(second.detail);
    expect([...first.lines, ...second.lines]).toEqual(rest);
    expect(rest.map((l) => l.balanceAfter)).toEqual([5000, 4900, 4700]);
  });

  it("refuses a cursor of another user, another range or no cursor at all", async () => {
    const user = await createTestUser();
    await topUp(user.id, freshRefId("foreign"), 5000);
    await payTo(user.id, 100, "Someone");
    const page = await readStatement(user.id, { ...rangeAroundNow(), limit: 1 });
    if (!page.ok || page.nextCursor === null) throw new Error("expected a next page");
    const stranger = await createTestUser();
    const foreign = { ok: false, detail: expect.stringContaining("foreign") };
    expect(await readStatement(stranger.id, { ...rangeAroundNow(), cursor: page.nextCursor })).toEqual(foreign);
    const { from } = rangeAroundNow();
    expect(await readStatement(user.id, { from, to: from, cursor: page.nextCursor })).toEqual(foreign);
    expect(await readStatement(user.id, { ...rangeAroundNow(), cursor: "bm90LWEtY3Vyc29y" })).toEqual({
      ok: false,
      detail: expect.stringContaining("malformed"),
    });
  });
});

describe("the statement's CSV export", () => {
  it("reads back through a real CSV parser exactly, for hostile payees and notes, and neutralises formulas", async () => {
    await assertHostileCsvRoundTrips();
  });

  it("quotes any text, whatever it holds: commas, quotes, CR, LF, CRLF, unicode, empty", () => {
    const texts = ["a,b", 'say "hi"', "one\rtwo", "one\ntwo", "one\r\ntwo", "", "naïve — 東京 🍰", '"', ",", "=cmd"];
    const text = texts.map((t) => csvRecord([t, { decimal: "-12.50" }])).join("");
    const records = parse(text) as string[][];
    expect(records).toEqual(texts.map((t) => [t === "=cmd" ? "'=cmd" : t, "-12.50"]));
    expect(() => csvRecord([{ decimal: "=1+1" }])).toThrow(TypeError);
  });

  it("matches the statement's lines, oldest first, amounts in major units", async () => {
    const userId = await userThroughDebt();
    const records = parse(await csvText(userId, rangeAroundNow()), { bom: true }) as string[][];
    const lines = await allLines(userId, rangeAroundNow(), 100);
    expect(records.slice(1).map((r) => [r[0], r[1], r[2], r[3], r[6], r[7]])).toEqual(
      lines
        .map((l) => [l.postedAt, l.reference, l.description, l.counterparty, "", ""])
        .map((row, i) => {
          const amounts = [
            ["50.00", "50.00"],
            ["-40.00", "10.00"],
            ["-50.00", "-40.00"],
            ["60.00", "20.00"],
          ][i]!;
          return [...row.slice(0, 4), ...amounts];
        }),
    );
  });
});

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

/** The index (or the node type, when it is none) of every node of `explained` that reads ledger_postings. */
function postingReads(explained: { "QUERY PLAN": Array<{ Plan: PlanNode }> }): string[] {
  const reads: string[] = [];
  const visit = (node: PlanNode) => {
    if (node["Relation Name"] === "ledger_postings") reads.push(node["Index Name"] ?? node["Node Type"]);
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(explained["QUERY PLAN"][0]!.Plan);
  return reads;
}

describe("the statement's plans", () => {
  it("read the caller's wallet postings only through ledger_postings_wallet_idx, never a scan", async () => {
    const userId = await userThroughDebt();
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      // A young table's statistics make every plan look cheap; forbid the scan so only a usable index can win.
      await client.query("SET LOCAL enable_seqscan = off");
      const { startIso, endIso } = {
        startIso: `${rangeAroundNow().from}T00:00:00Z`,
        endIso: `${rangeAroundNow().to}T00:00:00Z`,
      };
      const plans = [
        await client.query(`EXPLAIN (FORMAT JSON) ${WALLET_ACCOUNT_AT_SQL}`, [userId, new Date().toISOString()]),
        await client.query(`EXPLAIN (FORMAT JSON) ${STATEMENT_POSTINGS_SQL}`, [
          userId,
          startIso,
          endIso,
          null,
          null,
          51,
        ]),
      ].map(({ rows }) => rows[0]);
      for (const plan of plans) {
        // Every read of ledger_postings is the wallet index, in its order (no sort below the postings' read).
        const reads = postingReads(plan);
        expect(reads.length).toBeGreaterThan(0);
        expect(reads).toEqual(reads.map(() => "ledger_postings_wallet_idx"));
        expect(JSON.stringify(plan)).not.toContain("Seq Scan");
      }
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
});
