/**
 * Payments: claim and debit in one transaction (contract sections 1, 3 and 8). Real PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { createPayment } from "../../lib/payments/create-payment";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf, countRows, freshRefId, seedBalance } from "../helpers/ledger";

const pay = (userId: string, orderId: string, amountMinor: number) =>
  createPayment({ userId, orderId, amountMinor, currency: "USD" });

describe("createPayment", () => {
  it("debits once and replays the first response byte for byte", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 500);
    const orderId = freshRefId("order");
    const first = await pay(user.id, orderId, 200);
    expect(first).toMatchObject({ kind: "response", replayed: false, response: { status: 201 } });
    const second = await pay(user.id, orderId, 200);
    if (first.kind !== "response" || second.kind !== "response") throw new Error("expected responses");
    expect(second.replayed).toBe(true);
    expect(second.response).toEqual(first.response);
    expect(JSON.parse(first.response.body)).toMatchObject({
      payment: { orderId, amount: 200, currency: "USD", status: "succeeded" },
    });
    expect(await balanceOf(user.id)).toBe(300);
  });

  it("402 insufficient_funds is stored and replays as 402 even after the balance grows (an outcome never flips)", async () => {
    const user = await createTestUser();
    const orderId = freshRefId("order");
    const first = await pay(user.id, orderId, 100);
    expect(first).toMatchObject({ kind: "response", response: { status: 402 } });
    if (first.kind !== "response") return;
    expect(JSON.parse(first.response.body)).toMatchObject({ code: "insufficient_funds", status: 402 });
    await seedBalance(user.id, 1000);
    const again = await pay(user.id, orderId, 100);
    expect(again).toEqual({ kind: "response", replayed: true, response: first.response });
    expect(await balanceOf(user.id)).toBe(1000);
  });

  it("same order id with another amount is refused with the field, and nothing moves", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 1000);
    const orderId = freshRefId("order");
    await pay(user.id, orderId, 100);
    expect(await pay(user.id, orderId, 150)).toEqual({ kind: "mismatch", fields: ["amount"] });
    expect(await balanceOf(user.id)).toBe(900);
  });

  it("50 concurrent payments of 10 with different order ids on a balance of 100: exactly 10 succeed, 40 get 402, balance 0", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 100);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => pay(user.id, `order-${i}-${user.id.slice(-8)}`, 10)),
    );
    const statuses = results.map((r) => (r.kind === "response" ? r.response.status : r.kind));
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(40);
    expect(await balanceOf(user.id)).toBe(0);
    const rows = await testPool().query(
      "SELECT status, count(*)::int AS n FROM ledger_entries WHERE user_id = $1 GROUP BY status ORDER BY status",
      [user.id],
    );
    expect(rows.rows).toEqual([
      { status: "failed", n: 40 },
      { status: "succeeded", n: 10 },
    ]);
  });

  it("C10: concurrent identical payments give one row, one debit and identical responses", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 1000);
    const orderId = freshRefId("order");
    const results = await Promise.all(Array.from({ length: 20 }, () => pay(user.id, orderId, 70)));
    const bodies = new Set(
      results.map((r) => (r.kind === "response" ? `${r.response.status} ${r.response.body}` : r.kind)),
    );
    expect(bodies.size).toBe(1);
    expect(results.filter((r) => r.kind === "response" && !r.replayed)).toHaveLength(1);
    expect(await countRows(user.id, "payment", orderId)).toBe(1);
    expect(await balanceOf(user.id)).toBe(930);
  });
});
