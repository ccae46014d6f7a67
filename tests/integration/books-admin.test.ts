/**
 * The admin Books page's reads (contract section 13.5): the trial balance of real movements (top-ups, a payment, a
 * reward, a refund reserved then settled, one reserved then released, a lost dispute into debt), its flag when the
 * books do not balance (negative controls: a tampered posting, a wallet moved without its books), one house account's
 * postings paged by cursor without a gap or a repeat under tied times (and the control: a cursor cut to the
 * millisecond skips), and the plan of the house sums (the partial index, and why its predicate is written out).
 *
 * In-process against a real PostgreSQL, Redis and sandbox bank. The database is shared with other test files running
 * at the same time, so every assertion is scoped to this file's own users: the trial balance through its user scope,
 * the postings by moving this file's own postings to instants in 2001-2003 (test-only tampering with the append-only
 * trigger bypassed in one session) and walking the list from there.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listAccountPostings, type BookPosting } from "@/lib/admin/list-account-postings";
import { HOUSE_SUMS_SQL, readTrialBalance, type TrialBalance } from "@/lib/admin/read-trial-balance";
import { refundMerchantRefFor } from "@/lib/refunds/refund-ref";
import { createRefund } from "@/lib/refunds/create-refund";
import { creditReward } from "@/lib/rewards/credit-reward";
import { encodeCursor } from "@/lib/pagination/cursor";
import { readableReference } from "@/lib/wallet/readable-reference";
import { createTestUser, testPool } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { bankDisputeOf, deliver, disputeEventBodies, pay, topUp } from "./chargeback-fixtures";
import { deliverRefundEvent, succeededTopup, waitForBankRefund } from "./refund-fixtures";
import { startTestBank, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank({ settleDelayMs: 30 });
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

/** Runs `sql` with the append-only trigger bypassed, in a session of its own (as tests/integration/books.test.ts). */
async function tamper(sql: string, params: unknown[]): Promise<void> {
  const client = await testPool().connect();
  try {
    await client.query("BEGIN");
    await client.query("SET LOCAL session_replication_role = replica");
    await client.query(sql, params);
    await client.query("COMMIT");
  } finally {
    client.release();
  }
}

/** The balance as shown of each line of `books`, by account (the wallet lines by their line name), as numbers. */
function shownBalances(books: TrialBalance): Record<string, number> {
  return Object.fromEntries(books.lines.map((l) => [l.line === "house" ? l.account : l.line, Number(l.balanceMinor)]));
}

/**
 * Moves the user's postings to `account` to the given instants (text with microseconds), in posting id order, so they
 * sort where nobody else's do.
 */
async function pinPostings(userId: string, account: string, instants: string[]): Promise<void> {
  await tamper(
    `UPDATE ledger_postings p SET posted_at = t.at::timestamptz
       FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM ledger_postings
              WHERE user_id = $1 AND account = $2) o
       JOIN unnest($3::text[]) WITH ORDINALITY AS t(at, n) ON t.n = o.n
      WHERE p.user_id = $1 AND p.account = $2 AND p.id = o.id`,
    [userId, account, instants],
  );
}

/**
 * Walks `account`'s postings `limit` at a time from `startCursor` until a page reaches before `untilMs` (or the list
 * ends); returns every page's postings of `userId`, in the order the pages gave them, and how many pages it took.
 */
async function walk(account: string, startCursor: string, limit: number, userId: string, untilMs: number) {
  const mine: BookPosting[][] = [];
  let cursor: string | null = startCursor;
  for (let pages = 0; cursor !== null && pages < 50; pages++) {
    const page = await listAccountPostings({ account, limit, cursor });
    if (page.kind !== "page") throw new Error(JSON.stringify(page));
    mine.push(page.items.filter((p) => p.userId === userId));
    if (page.items.some((p) => Date.parse(p.postedAt) < untilMs)) break;
    cursor = page.nextCursor;
  }
  return mine;
}

/** A cursor of `account`'s list just after the instant `ms` (every posting at or before it comes next). */
function cursorAfter(account: string, ms: number): string {
  return encodeCursor("admin-account-postings", `account:${account}`, {
    createdAt: new Date(ms),
    subMillisecondUs: 0,
    id: Number.MAX_SAFE_INTEGER,
  });
}

describe("the trial balance", () => {
  it("of one user's top-ups, payment, reward, refunds settled and released, and a chargeback into debt: to the minor unit, balanced", async () => {
    const user = await createTestUser();
    const refundable = await succeededTopup(user.id, 2000);
    const disputedRef = freshRefId("sbx-dispute-trial");
    const disputedMerchantRef = await topUp(user.id, disputedRef, 5000);
    expect(await pay(user.id, 4000)).toEqual({ status: 201, code: null });
    const reward = await creditReward({ userId: user.id, adId: freshRefId("ad") });
    expect(reward.kind === "response" && reward.response.status).toBe(201);
    // A refund the bank settles (reserve, then settle) and one it fails (reserve, then release).
    for (const [refundId, amountMinor, outcome] of [
      [freshRefId("settled"), 600, "succeeded"],
      [freshRefId("sbx-refund-fail-released"), 400, "failed"],
    ] as const) {
      const made = await createRefund({ userId: user.id, topupRefId: refundable.refId, refundId, amountMinor });
      expect(made.kind === "response" && made.response.status).toBe(201);
      const merchantRef = refundMerchantRefFor(user.id, refundId);
      const settled = await waitForBankRefund(bank.url, refundable.bankChargeId!, merchantRef, outcome);
      const event = outcome === "succeeded" ? "refund.succeeded" : "refund.failed";
      expect(await deliverRefundEvent(event, settled, `evt_${refundId}`)).toMatchObject({ kind: "received" });
    }
    await bankDisputeOf(bank.url, disputedMerchantRef, "lost");
    for (const body of await disputeEventBodies(bank.url, disputedMerchantRef)) await deliver(body);

    const rewardMinor = Number(
      (
        await testPool().query<{ amount: string }>(
          "SELECT amount_minor::text AS amount FROM ledger_entries WHERE user_id = $1 AND type = 'reward'",
          [user.id],
        )
      ).rows[0]!.amount,
    );
    // The account: 2000 + 5000 − 4000 + reward − 600 − 400 + 400 (released) − 5000 (the dispute) = reward − 2600.
    expect(rewardMinor).toBeLessThan(2600);
    const books = await readTrialBalance({ userIds: [user.id] });
    expect(shownBalances(books)).toEqual({
      // Assets (debit-normal), shown as minus the sum: charged 7000, refunded 600, disputed 5000 back.
      bank_clearing: 7000 - 600 - 5000,
      rewards_funded: rewardMinor,
      merchants_payable: 4000,
      refunds_in_flight: 0,
      // Every house account of the chart is a line, moved or not (contract sections 14 and 15).
      payouts_in_flight: 0,
      transfers_in_transit: 0,
      owed_to_users: 0,
      owed_by_users: rewardMinor - 2600,
    });
    expect(books.lines.find((l) => l.line === "owed_by_users")).toMatchObject({ users: 1, normalSide: "credit" });
    expect(books.lines.find((l) => l.line === "owed_to_users")).toMatchObject({ users: 0 });
    expect(books).toMatchObject({ totalMinor: "0", balanced: true, currency: "USD" });
    // The days: every posting of this user is of the last 14 days, so each column sums to the balance it made.
    expect(books.days).toHaveLength(14);
    expect(books.days[0]!.day).toBe(new Date().toISOString().slice(0, 10));
    const summed = (name: string) => books.days.reduce((sum, day) => sum + Number(day.changes[name] ?? 0), 0);
    expect(summed("bank_clearing")).toBe(1400);
    expect(summed("merchants_payable")).toBe(4000);
    expect(summed("rewards_funded")).toBe(rewardMinor);
    expect(summed("refunds_in_flight")).toBe(0);
    expect(summed("wallets")).toBe(rewardMinor - 2600);

    // The clearing account's postings of this user, newest first, each with its movement and its top-up's timeline.
    const t = Date.parse("2002-03-04T05:06:07.000Z");
    await pinPostings(
      user.id,
      "bank_clearing",
      [1, 2, 3, 4].map((s) => new Date(t + s * 1000).toISOString()),
    );
    const listed = (await walk("bank_clearing", cursorAfter("bank_clearing", t + 10_000), 100, user.id, t)).flat();
    const entries = await testPool().query<{ id: string; type: string; ref_id: string }>(
      "SELECT id::text, type, ref_id FROM ledger_entries WHERE user_id = $1",
      [user.id],
    );
    const refundRow = entries.rows.find((e) => e.type === "refund" && !e.ref_id.startsWith("sbx-refund-fail"))!;
    expect(listed.map((p) => [p.type, p.event, p.balanceChangeMinor, p.topupRefId])).toEqual([
      ["chargeback", "move", -5000, disputedRef],
      ["refund", "settle", -600, refundable.refId],
      ["topup", "move", 5000, disputedRef],
      ["topup", "move", 2000, refundable.refId],
    ]);
    expect(listed[1]).toMatchObject({
      userId: user.id,
      userEmail: user.email,
      amountMinor: 600,
      refId: refundRow.ref_id,
      reference: readableReference("refund", Number(refundRow.id)),
      currency: "USD",
      postedAt: new Date(t + 3000).toISOString(),
    });
  });

  it("negative control: a tampered house posting is a total other than zero, flagged (balanced: false)", async () => {
    const user = await createTestUser();
    await topUp(user.id, freshRefId("trial-tamper"), 5000);
    expect(await pay(user.id, 4000)).toEqual({ status: 201, code: null });
    expect(await readTrialBalance({ userIds: [user.id] })).toMatchObject({ totalMinor: "0", balanced: true });
    await tamper(
      "UPDATE ledger_postings SET amount_minor = amount_minor + 1 WHERE user_id = $1 AND account = 'merchants_payable'",
      [user.id],
    );
    const books = await readTrialBalance({ userIds: [user.id] });
    expect(books).toMatchObject({ totalMinor: "1", balanced: false });
    expect(shownBalances(books).merchants_payable).toBe(4001);
  });

  it("negative control: a wallet moved without its books (the balance bumped by SQL) is a total other than zero", async () => {
    const user = await createTestUser();
    await topUp(user.id, freshRefId("trial-wallet"), 3000);
    await testPool().query("UPDATE wallets SET balance_minor = balance_minor + 5 WHERE user_id = $1", [user.id]);
    const books = await readTrialBalance({ userIds: [user.id] });
    expect(books).toMatchObject({ totalMinor: "5", balanced: false });
    expect(shownBalances(books)).toMatchObject({ owed_to_users: 3005, bank_clearing: 3000 });
  });

  it("sums each house account from its partial index alone (index-only), which its predicate written out makes usable", async () => {
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      // A small test table may be cheaper to read whole; what is checked is that the index can serve the sum.
      await client.query("SET LOCAL enable_seqscan = off");
      await client.query("SET LOCAL enable_bitmapscan = off");
      const plan = async (sql: string) =>
        JSON.stringify((await client.query(`EXPLAIN (FORMAT JSON) ${sql}`, [null, 50])).rows[0]["QUERY PLAN"]);
      const used = await plan(HOUSE_SUMS_SQL);
      expect(used).toContain('"Node Type":"Index Only Scan"');
      expect(used).toContain('"Index Name":"ledger_postings_house_idx"');
      // The control: without `p.account <> 'wallet'` the planner cannot prove the index's predicate, and reads the
      // table (the wallets' postings too).
      const without = await plan(HOUSE_SUMS_SQL.replace("AND p.account <> 'wallet'", ""));
      expect(without).not.toContain("ledger_postings_house_idx");
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
  });
});

describe("one house account's postings", () => {
  it("page newest first without a gap or a repeat under postings tied to the microsecond and within one millisecond", async () => {
    const user = await createTestUser();
    await topUp(user.id, freshRefId("ties"), 5000);
    for (let i = 0; i < 7; i++) expect(await pay(user.id, 100 + i)).toEqual({ status: 201, code: null });
    // Seven postings in one millisecond: two tied at .000900, three at .000400, two at .000000 past it.
    const base = "2001-02-03T04:05:06.789";
    const instants = ["000", "000", "400", "400", "400", "900", "900"].map((us) => `${base}${us}Z`);
    await pinPostings(user.id, "merchants_payable", instants);
    const ids = await testPool().query<{ id: string }>(
      `SELECT id::text FROM ledger_postings WHERE user_id = $1 AND account = 'merchants_payable'
        ORDER BY posted_at DESC, id DESC`,
      [user.id],
    );
    const expected = ids.rows.map((r) => Number(r.id));
    const t = Date.parse(`${base}Z`);
    const pages = await walk("merchants_payable", cursorAfter("merchants_payable", t + 1000), 2, user.id, t);
    expect(pages.flat().map((p) => p.id)).toEqual(expected);
    expect(pages.filter((page) => page.length > 0).map((page) => page.length)).toEqual([2, 2, 2, 1]);
    expect(pages.flat().every((p) => p.type === "payment" && p.event === "move" && p.topupRefId === null)).toBe(true);
    expect(pages.flat()[0]!.reference).toMatch(/^PY-/);

    // The control: the first page's cursor cut to the millisecond (no microseconds) skips the rows of that millisecond
    // after it: the list then jumps from the .000900 pair to whatever is older than .000000.
    const first = await listAccountPostings({
      account: "merchants_payable",
      limit: 2,
      cursor: cursorAfter("merchants_payable", t + 1000),
    });
    if (first.kind !== "page") throw new Error(first.kind);
    const last = first.items[first.items.length - 1]!;
    const cut = encodeCursor("admin-account-postings", "account:merchants_payable", {
      createdAt: new Date(Date.parse(last.postedAt)),
      id: last.id,
    });
    const skipped = await listAccountPostings({ account: "merchants_payable", limit: 100, cursor: cut });
    if (skipped.kind !== "page") throw new Error(skipped.kind);
    const seen = skipped.items.filter((p) => p.userId === user.id).map((p) => p.id);
    expect(seen).not.toContain(expected[2]);
    expect(seen.length).toBeLessThan(expected.length - 2);
  });

  it("answers unknown_account for a name that is not a house account, the per-user wallet included", async () => {
    for (const account of ["wallet", "no_such_account", "", "BANK_CLEARING"]) {
      expect(await listAccountPostings({ account })).toEqual({ kind: "unknown_account" });
    }
  });

  it("refuses a malformed cursor and another account's cursor (invalid_cursor)", async () => {
    expect(await listAccountPostings({ account: "bank_clearing", cursor: "not-a-cursor" })).toMatchObject({
      kind: "invalid_cursor",
      detail: expect.stringContaining("malformed"),
    });
    const other = cursorAfter("merchants_payable", Date.now());
    expect(await listAccountPostings({ account: "bank_clearing", cursor: other })).toMatchObject({
      kind: "invalid_cursor",
      detail: expect.stringContaining("foreign"),
    });
  });
});

describe("the trial balance past 2^53", () => {
  it("sums of many wallets near the ceiling stay exact as decimal strings (no error, no rounding)", async () => {
    const users = [await createTestUser(), await createTestUser()];
    const nearCeiling = 2n ** 53n - 1n;
    for (const user of users)
      await testPool().query("INSERT INTO wallets (user_id, balance_minor, currency) VALUES ($1, $2, 'USD')", [
        user.id,
        nearCeiling.toString(),
      ]);
    const books = await readTrialBalance({ userIds: users.map((u) => u.id) });
    expect(books.lines.find((l) => l.line === "owed_to_users")).toMatchObject({
      sumMinor: (2n * nearCeiling).toString(),
      users: 2,
    });
    // The wallets were seeded without postings: the total says so, exactly.
    expect(books).toMatchObject({ totalMinor: (2n * nearCeiling).toString(), balanced: false });
  });
});
