/**
 * The statement's filters, search and days (docs/decisions/055), and what is not a movement of the customer's money
 * (a refund refused at its claim), on a real PostgreSQL: lib/wallet/list-entries.ts and get-movement.ts.
 */
import { describe, expect, it } from "vitest";
import { completeEntry } from "../../lib/ledger/transitions";
import { claimRefund, type RefundClaimRequest } from "../../lib/ledger/refunds";
import type { StoredResponse } from "../../lib/ledger/entry";
import { createPayment } from "../../lib/payments/create-payment";
import { getMovement } from "../../lib/wallet/get-movement";
import { listEntries, type StatementFilters } from "../../lib/wallet/list-entries";
import { createTestUser, testPool } from "../helpers/db";
import { claimEntry, claimRequest, freshRefId, seedBalance } from "../helpers/ledger";

const REFUSALS = {
  insufficientFunds: { status: 402, body: '{"code":"insufficient_funds"}' },
  debtOutstanding: { status: 402, body: '{"code":"debt_outstanding"}' },
  exceedsTopup: { status: 422, body: '{"code":"refund_exceeds_topup"}' },
  topupDisputed: { status: 422, body: '{"code":"topup_disputed"}' },
} satisfies Record<string, StoredResponse>;

/** A succeeded top-up of `amountMinor`, credited through the ledger's own transitions. */
async function succeededTopup(userId: string, amountMinor: number) {
  const claimed = await claimEntry(claimRequest(userId, { amountMinor }));
  const done = await completeEntry(
    { userId, entryId: claimed.id },
    {
      actor: "request",
      guard: { kind: "lease", fencingToken: claimed.fencingToken },
      credit: true,
      bankChargeId: freshRefId("ch"),
    },
  );
  if (done.kind !== "moved") throw new Error("expected the top-up to succeed");
  return done.entry;
}

function refundRequest(userId: string, topup: { id: number; refId: string }, amountMinor: number): RefundClaimRequest {
  return {
    key: { userId, type: "refund", refId: freshRefId("rf") },
    topupEntryId: topup.id,
    amountMinor,
    currency: "USD",
    params: { amount: amountMinor, currency: "USD", topupRefId: topup.refId },
    leaseOwner: "statement-test",
    leaseMs: 30_000,
    actor: "admin",
    refusals: REFUSALS,
  };
}

async function refsOf(userId: string, filters: StatementFilters & { limit?: number; cursor?: string } = {}) {
  const page = await listEntries(userId, filters);
  if (!page.ok) throw new Error(page.detail);
  return page.items.map((line) => line.refId);
}

/** Moves an entry's creation time (test setup: the list orders and ranges by it). */
async function setCreatedAt(userId: string, refId: string, iso: string): Promise<void> {
  await testPool().query("UPDATE ledger_entries SET created_at = $3 WHERE user_id = $1 AND ref_id = $2", [
    userId,
    refId,
    iso,
  ]);
}

describe("the statement's filters", () => {
  it("kind, status, search by payee, note, full and readable reference, and UTC days, each on the server", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 5000);
    const coffee = freshRefId("order");
    const books = freshRefId("order");
    const plain = freshRefId("order");
    const refused = freshRefId("order");
    const base = { userId: user.id, currency: "USD" };
    await createPayment({ ...base, orderId: coffee, amountMinor: 300, payee: "Corner Coffee", note: "Flat White x2" });
    await createPayment({ ...base, orderId: books, amountMinor: 1200, payee: "City Books", note: "50% off_sale" });
    await createPayment({ ...base, orderId: plain, amountMinor: 100 });
    await createPayment({ ...base, orderId: refused, amountMinor: 999_999, payee: "Corner Coffee" });
    await setCreatedAt(user.id, topup.refId, "2026-11-28T23:59:59.999Z");
    await setCreatedAt(user.id, coffee, "2026-11-29T00:00:00.000Z");
    await setCreatedAt(user.id, books, "2026-11-30T12:00:00.000Z");
    await setCreatedAt(user.id, plain, "2026-11-30T23:59:59.999Z");
    await setCreatedAt(user.id, refused, "2026-12-01T00:00:00.000Z");

    expect(await refsOf(user.id)).toEqual([refused, plain, books, coffee, topup.refId]);
    expect(await refsOf(user.id, { type: "topup" })).toEqual([topup.refId]);
    expect(await refsOf(user.id, { type: "payment", status: "failed" })).toEqual([refused]);
    expect(await refsOf(user.id, { status: "succeeded" })).toEqual([plain, books, coffee, topup.refId]);
    // Search: payee and note, case-insensitive substrings; `%` and `_` are only text.
    expect(await refsOf(user.id, { q: "corner coffee" })).toEqual([refused, coffee]);
    expect(await refsOf(user.id, { q: "FLAT WHITE" })).toEqual([coffee]);
    expect(await refsOf(user.id, { q: "50%" })).toEqual([books]);
    expect(await refsOf(user.id, { q: "%" })).toEqual([books]);
    expect(await refsOf(user.id, { q: "_" })).toEqual([books]);
    // The full reference (a substring of it), and the readable one in any case, with or without its prefix.
    expect(await refsOf(user.id, { q: plain })).toEqual([plain]);
    const lines = await listEntries(user.id, { q: plain });
    if (!lines.ok) throw new Error(lines.detail);
    const reference = lines.items[0]!.reference;
    expect(reference).toMatch(/^PY-[0-9A-Z]{4}-[0-9A-Z]{4}$/);
    expect(await refsOf(user.id, { q: reference.toLowerCase() })).toEqual([plain]);
    expect(await refsOf(user.id, { q: reference.slice(3) })).toEqual([plain]);
    // Another kind's prefix on the same characters names no entry.
    expect(await refsOf(user.id, { q: `TP${reference.slice(2)}` })).toEqual([]);
    // UTC days, both ends included, to the millisecond.
    expect(await refsOf(user.id, { from: "2026-11-29", to: "2026-11-30" })).toEqual([plain, books, coffee]);
    expect(await refsOf(user.id, { to: "2026-11-28" })).toEqual([topup.refId]);
    expect(await refsOf(user.id, { from: "2026-12-01" })).toEqual([refused]);
    expect(await refsOf(user.id, { from: "2026-11-30", to: "2026-11-30", q: "books" })).toEqual([books]);
    // A payment's line names its payee and note; a payment without them has neither key.
    const coffeeLine = (await listEntries(user.id, { q: coffee })) as { items: Record<string, unknown>[] };
    expect(coffeeLine.items[0]).toMatchObject({ payee: "Corner Coffee", note: "Flat White x2", type: "payment" });
    const plainLine = lines.items[0]!;
    expect("payee" in plainLine || "note" in plainLine).toBe(false);
  });

  it("another user's movements are never found, by search or by reference", async () => {
    const owner = await createTestUser();
    const other = await createTestUser();
    await seedBalance(owner.id, 1000);
    const orderId = freshRefId("order");
    await createPayment({ userId: owner.id, orderId, amountMinor: 100, currency: "USD", payee: "Green Grocer" });
    const page = await listEntries(owner.id, { q: orderId });
    if (!page.ok) throw new Error(page.detail);
    const reference = page.items[0]!.reference;
    expect(await refsOf(other.id, { q: "Green Grocer" })).toEqual([]);
    expect(await refsOf(other.id, { q: reference })).toEqual([]);
    expect(await getMovement(other.id, reference)).toBeNull();
    expect(await getMovement(owner.id, reference)).toMatchObject({ line: { refId: orderId, payee: "Green Grocer" } });
  });

  it("pages by cursor within the filters, and a cursor of other filters is foreign", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 10_000);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      const orderId = freshRefId("order");
      made.push(orderId);
      await createPayment({ userId: user.id, orderId, amountMinor: 10, currency: "USD", payee: `Shop ${i % 2}` });
    }
    const first = await listEntries(user.id, { q: "Shop 0", limit: 2 });
    if (!first.ok || first.nextCursor === null) throw new Error("expected a second page");
    const second = await listEntries(user.id, { q: "Shop 0", limit: 2, cursor: first.nextCursor });
    if (!second.ok) throw new Error(second.detail);
    expect([...first.items, ...second.items].map((line) => line.refId)).toEqual([made[4], made[2], made[0]]);
    expect(second.nextCursor).toBeNull();
    const foreign = await listEntries(user.id, { q: "Shop 1", limit: 2, cursor: first.nextCursor });
    expect(foreign).toMatchObject({ ok: false, detail: expect.stringContaining("foreign") });
    const unfiltered = await listEntries(user.id, { limit: 2, cursor: first.nextCursor });
    expect(unfiltered.ok).toBe(false);
  });
});

describe("a refund refused at its claim (docs/decisions/055)", () => {
  it("is not in the customer's statement nor has a movement page; a reserved refund is and has", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const refusedClaim = await claimRefund(refundRequest(user.id, topup, 3000));
    expect(refusedClaim.kind).toBe("stored_refusal");
    const reserved = await claimRefund(refundRequest(user.id, topup, 400));
    expect(reserved.kind).toBe("reserved");
    if (refusedClaim.kind !== "stored_refusal" || reserved.kind !== "reserved") throw new Error("unreachable");

    const shown = await refsOf(user.id);
    expect(shown).toEqual([reserved.entry.refId, topup.refId]);
    expect(await refsOf(user.id, { type: "refund", status: "failed" })).toEqual([]);
    expect(await refsOf(user.id, { q: refusedClaim.entry.refId })).toEqual([]);
    const page = await listEntries(user.id, { type: "refund" });
    if (!page.ok) throw new Error(page.detail);
    expect(page.items.map((line) => line.reference)).toHaveLength(1);
    const { readableReference } = await import("../../lib/wallet/readable-reference");
    expect(await getMovement(user.id, readableReference("refund", refusedClaim.entry.id))).toBeNull();
    const movement = await getMovement(user.id, readableReference("refund", reserved.entry.id));
    expect(movement?.line).toMatchObject({ type: "refund", status: "initiated", refId: reserved.entry.refId });
    // Its timeline is its audit trail: claimed (NULL -> initiated).
    expect(movement?.steps.map((step) => [step.from, step.to, step.actor])).toEqual([[null, "initiated", "admin"]]);
  });
});

describe("the statement's plan", () => {
  it("reads the caller's rows through (user_id, created_at, id) with every filter, never a sequential scan", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 100);
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      // A young table's statistics make every plan look cheap; forbid the scan so only a usable index can win.
      await client.query("SET LOCAL enable_seqscan = off");
      const { rows } = await client.query(
        `EXPLAIN (FORMAT JSON) SELECT id FROM ledger_entries
          WHERE user_id = $1 AND type = 'payment' AND status = 'failed'
            AND created_at >= now() - interval '1 day' AND strpos(lower(ref_id), 'x') > 0
          ORDER BY created_at DESC, id DESC LIMIT 51`,
        [user.id],
      );
      const plan = JSON.stringify(rows[0]);
      expect(plan).not.toContain("Seq Scan");
      expect(plan).toContain("user_id");
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
});
