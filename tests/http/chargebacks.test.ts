/**
 * Chargebacks end to end over real HTTP (contract section 12): the real app, the real sandbox bank sending its own
 * signed dispute webhooks (a dispute opened by its control, and the `sbx-dispute-reversed-` switch), real
 * PostgreSQL and Redis. Nothing is delivered by the test:
 * the bank opens and closes the dispute and the app lands it from its webhooks (or its reconciler, whichever comes
 * first); the test only watches the API.
 */
import { describe, expect, it } from "vitest";
import { testPool } from "../helpers/db";
import { api, bankChargesFor, createApiUser, waitForTopupStatus, type ApiUser } from "../helpers/http";
import { freshRefId } from "../helpers/ledger";
import { testStack } from "../helpers/stack";

async function topUp(user: ApiUser, refId: string, amount: number): Promise<void> {
  const created = await api("/api/v1/topups", { token: user.token, body: { refId, amount } });
  expect(created.status).toBe(201);
  expect((await waitForTopupStatus(user.token, refId)).status).toBe("succeeded");
}

function pay(user: ApiUser, amount: number) {
  return api("/api/v1/payments", { token: user.token, body: { orderId: freshRefId("order"), amount } });
}

/** Polls `GET /api/v1/wallet` (every 100 ms, at most 20 s) until `done` holds; returns the wallet. */
async function walletWhen(user: ApiUser, done: (wallet: any) => boolean): Promise<any> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const wallet = (await api("/api/v1/wallet", { token: user.token })).json;
    if (done(wallet)) return wallet;
    if (Date.now() > deadline) throw new Error(`wallet still ${JSON.stringify(wallet)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function disputeEntries(userId: string): Promise<string[]> {
  const result = await testPool().query<{ type: string; status: string }>(
    "SELECT type, status FROM ledger_entries WHERE user_id = $1 AND type LIKE 'chargeback%' ORDER BY id",
    [userId],
  );
  return result.rows.map((r) => `${r.type}:${r.status}`);
}

describe("chargebacks over HTTP", () => {
  it("a lost dispute after the money was spent: debt shown, payments 402 debt_outstanding, a top-up repays it first", async () => {
    const user = await createApiUser();
    const refId = freshRefId("http-spent");
    await topUp(user, refId, 5000);
    expect((await pay(user, 4000)).status).toBe(201);
    // The cardholder disputes the charge after the money was spent; the bank loses it (the sandbox control opens it
    // now, so the payment above came first whatever the machine's speed).
    const [charge] = await bankChargesFor(`topup:${user.id}:${refId}`);
    const opened = await fetch(`${testStack().bankUrl}/_sandbox/disputes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chargeId: charge.id, plan: ["lost"] }),
    });
    expect(opened.status).toBe(201);
    const owed = await walletWhen(user, (w) => w.debt !== undefined);
    expect(owed).toEqual({ balance: 0, debt: 4000, currency: "USD" });
    const refused = await pay(user, 100);
    expect(refused.status).toBe(402);
    expect(refused.json).toMatchObject({ code: "debt_outstanding" });
    await topUp(user, freshRefId("repay"), 4500);
    expect(await walletWhen(user, (w) => w.debt === undefined)).toEqual({ balance: 500, currency: "USD" });
    expect((await pay(user, 500)).status).toBe(201);
    expect(await disputeEntries(user.id)).toEqual(["chargeback:succeeded"]);
    const statement = (await api("/api/v1/entries", { token: user.token })).json;
    expect(statement.entries.map((e: { type: string }) => e.type)).toContain("chargeback");
  });

  it("a dispute lost then reversed (sbx-dispute-reversed-): one chargeback, one reversal, the balance back", async () => {
    const user = await createApiUser();
    await topUp(user, freshRefId("sbx-dispute-reversed-http"), 2600);
    const deadline = Date.now() + 20_000;
    while ((await disputeEntries(user.id)).length < 2 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await disputeEntries(user.id)).toEqual(["chargeback:succeeded", "chargeback_reversal:succeeded"]);
    expect(await walletWhen(user, () => true)).toEqual({ balance: 2600, currency: "USD" });
  });
});
