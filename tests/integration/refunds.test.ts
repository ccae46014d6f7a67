/**
 * Refunds (contract section 11; invariants 7.1, 7.2): money given back on a succeeded top-up lands exactly once,
 * through the same claim as every operation. In-process against a real PostgreSQL, Redis and sandbox bank (behind a
 * proxy that counts `POST /refunds` per key). Races are staged on row locks held by a test session and released
 * only once every contender is queued behind them (pg_blocking_pids), never by sleeping.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAudit } from "@/lib/audit/run-audit";
import { merchantRefFor } from "@/lib/bank/merchant-ref";
import { applyBankDispute } from "@/lib/chargebacks/apply-dispute";
import { claimRefund } from "@/lib/ledger/refunds";
import { findEntryByKey } from "@/lib/ledger/claim";
import { replayCacheKey } from "@/lib/ledger/replay-cache";
import { redis } from "@/lib/redis";
import { problemStoredResponse } from "@/lib/problems";
import { createPayment } from "@/lib/payments/create-payment";
import { resetChargeCursors } from "@/lib/reconciler/charge-cursor";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { createRefund, type RefundResult } from "@/lib/refunds/create-refund";
import { refundMerchantRefFor } from "@/lib/refunds/refund-ref";
import { createTestUser, testPool } from "../helpers/db";
import { dedicatedClient, freshRefId, transitionsOf } from "../helpers/ledger";
import { bankDisputeOf } from "./chargeback-fixtures";
import {
  bankRefundsOf,
  deliverRefundEvent,
  moneyOf,
  startCountingProxy,
  succeededTopup,
  waitForBankRefund,
} from "./refund-fixtures";
import { waitForBlockedSessions } from "../helpers/wait";
import { backendPid, passOptions, startTestBank, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;
let proxy: Awaited<ReturnType<typeof startCountingProxy>>;

beforeAll(async () => {
  // Refunds stay `pending` at the bank for 3 s: long enough to deliver a stale `refund.failed` before the bank's own
  // word exists, short enough for the tests that wait for it. Charges answer `succeeded` at once.
  bank = await startTestBank({ settleDelayMs: 3000 });
  proxy = await startCountingProxy(bank.url);
  // The operations read BANK_URL on first use (lib/env.ts), after this line.
  process.env.BANK_URL = proxy.url;
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
  await bank?.stop();
});

function responseOf(result: RefundResult) {
  if (result.kind !== "response") throw new Error(`expected a response, got ${JSON.stringify(result)}`);
  return { status: result.response.status, body: JSON.parse(result.response.body) };
}

/** Holds the row `id` of `userId` (a top-up or a wallet when `table` says so) locked until `release()`. */
async function holdRowLock(sql: string, params: unknown[]) {
  const client = await dedicatedClient("refund-test-holder");
  await client.query("BEGIN");
  await client.query(sql, params);
  const pid = await backendPid(client);
  return {
    pid,
    async release() {
      await client.query("COMMIT");
      await client.end();
    },
  };
}

describe("refunds: exactly once", () => {
  it("two admins refunding one top-up at once with the same refundId: one refund, one bank call, identical answers", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const refundId = freshRefId("same");
    const holder = await holdRowLock("SELECT 1 FROM ledger_entries WHERE user_id = $1 AND id = $2 FOR UPDATE", [
      user.id,
      topup.id,
    ]);
    const input = { userId: user.id, topupRefId: topup.refId, refundId, amountMinor: 400 };
    const both = [createRefund(input), createRefund(input)];
    await waitForBlockedSessions({ blockedBy: holder.pid }, 2);
    await holder.release();
    const [first, second] = (await Promise.all(both)).map(responseOf);
    expect(first).toEqual(second);
    expect(first?.status).toBe(201);
    expect(first?.body.refund).toMatchObject({ refundId, topupRefId: topup.refId, amount: 400, status: "processing" });
    expect(proxy.refundPosts.get(refundMerchantRefFor(user.id, refundId))).toBe(1);
    expect(await bankRefundsOf(bank.url, topup.bankChargeId!)).toHaveLength(1);
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 600, refunded: 400 });
  });

  it("different refundIds whose sum exceeds the top-up: the second is refused (422 stored), nothing debited twice", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const holder = await holdRowLock("SELECT 1 FROM ledger_entries WHERE user_id = $1 AND id = $2 FOR UPDATE", [
      user.id,
      topup.id,
    ]);
    const a = { userId: user.id, topupRefId: topup.refId, refundId: freshRefId("a"), amountMinor: 700 };
    const b = { userId: user.id, topupRefId: topup.refId, refundId: freshRefId("b"), amountMinor: 500 };
    const racing = [createRefund(a), createRefund(b)];
    await waitForBlockedSessions({ blockedBy: holder.pid }, 2);
    await holder.release();
    const answers = (await Promise.all(racing)).map(responseOf);
    const statuses = answers.map((x) => x.status).sort();
    expect(statuses).toEqual([201, 422]);
    const refused = answers.find((x) => x.status === 422)!;
    expect(refused.body.code).toBe("refund_exceeds_topup");
    const winner = answers.find((x) => x.status === 201)!;
    const won = winner.body.refund.amount as number;
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 1000 - won, refunded: won });
    // The refused one replays identically, and called the bank never.
    const loser = won === 700 ? b : a;
    expect(responseOf(await createRefund(loser))).toEqual(refused);
    expect(proxy.refundPosts.get(refundMerchantRefFor(user.id, loser.refundId))).toBeUndefined();
    expect(await bankRefundsOf(bank.url, topup.bankChargeId!)).toHaveLength(1);
  });

  it("a wallet that spent the money: 402 insufficient_funds stored, nothing reserved; same key other amount 422", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const paid = await createPayment({ userId: user.id, orderId: freshRefId("o"), amountMinor: 800, currency: "USD" });
    expect(paid.kind).toBe("response");
    const input = { userId: user.id, topupRefId: topup.refId, refundId: freshRefId("short"), amountMinor: 500 };
    const first = responseOf(await createRefund(input));
    expect(first).toMatchObject({ status: 402, body: { code: "insufficient_funds" } });
    expect(responseOf(await createRefund(input))).toEqual(first);
    expect(await createRefund({ ...input, amountMinor: 100 })).toEqual({ kind: "mismatch", fields: ["amount"] });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 200, refunded: 0 });
    expect(proxy.refundPosts.get(refundMerchantRefFor(user.id, input.refundId))).toBeUndefined();
  });

  it("a wallet owing a chargeback's debt: 402 debt_outstanding stored, nothing reserved, no bank call", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const other = await succeededTopup(user.id, 500);
    const paid = await createPayment({ userId: user.id, orderId: freshRefId("o"), amountMinor: 1500, currency: "USD" });
    expect(paid.kind === "response" && paid.response.status).toBe(201);
    // The bank loses a dispute of the second top-up: its chargeback finds the balance at 0, so 500 become debt.
    const opened = await fetch(`${bank.url}/_sandbox/disputes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chargeId: other.bankChargeId, plan: ["lost"] }),
    });
    expect(opened.status).toBe(201);
    const lost = await bankDisputeOf(bank.url, merchantRefFor(user.id, other.refId), "lost");
    expect(await applyBankDispute(lost, { actor: "reconciler", detail: "test: lost dispute" })).toMatchObject({
      kind: "applied",
    });
    const input = { userId: user.id, topupRefId: topup.refId, refundId: freshRefId("debt"), amountMinor: 100 };
    const first = responseOf(await createRefund(input));
    expect(first).toMatchObject({ status: 402, body: { code: "debt_outstanding" } });
    expect(responseOf(await createRefund(input))).toEqual(first);
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 0, refunded: 0 });
    expect(proxy.refundPosts.get(refundMerchantRefFor(user.id, input.refundId))).toBeUndefined();
    const row = await findEntryByKey({ userId: user.id, type: "refund", refId: input.refundId });
    expect(row).toMatchObject({ status: "failed", failureReason: "debt_outstanding" });
    const audit = await runAudit({ userIds: [user.id] });
    expect(audit.checks.find((c) => c.name === "balance_matches_ledger")).toMatchObject({ ok: true });
  });

  it("refuses a top-up that is unknown (404) and one that did not succeed (409 topup_not_refundable), claiming nothing", async () => {
    const user = await createTestUser();
    expect(await createRefund({ userId: user.id, topupRefId: "nope", refundId: "r1", amountMinor: 1 })).toEqual({
      kind: "topup_not_found",
    });
    const { createTopup } = await import("@/lib/topups/create-topup");
    const declinedRef = freshRefId("sbx-decline-rf");
    await createTopup({ userId: user.id, refId: declinedRef, amountMinor: 300, currency: "USD" });
    const refundId = freshRefId("declined");
    expect(await createRefund({ userId: user.id, topupRefId: declinedRef, refundId, amountMinor: 1 })).toMatchObject({
      kind: "topup_not_refundable",
    });
    expect(await findEntryByKey({ userId: user.id, type: "refund", refId: refundId })).toBeNull();
    // A refundId already used answers as its row, before the top-up's own check (contract section 9's order): the
    // same refundId on the declined top-up is another operation under that key (422), not a 409.
    const used = await succeededTopup(user.id, 500);
    const first = responseOf(await createRefund({ userId: user.id, topupRefId: used.refId, refundId, amountMinor: 1 }));
    expect(first.status).toBe(201);
    const again = { userId: user.id, topupRefId: declinedRef, refundId, amountMinor: 1 };
    expect(await createRefund(again)).toEqual({ kind: "mismatch", fields: ["topupRefId"] });
    // The same from the row itself, without the response's Redis copy.
    await redis()!.del(replayCacheKey({ userId: user.id, type: "refund", refId: refundId }));
    expect(await createRefund(again)).toEqual({ kind: "mismatch", fields: ["topupRefId"] });
  });

  it("a payment racing a refund cannot spend the money being refunded (the claim debits)", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const holder = await holdRowLock("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [user.id]);
    const refund = createRefund({
      userId: user.id,
      topupRefId: topup.refId,
      refundId: freshRefId("r"),
      amountMinor: 1000,
    });
    const payment = createPayment({ userId: user.id, orderId: freshRefId("o"), amountMinor: 1000, currency: "USD" });
    await waitForBlockedSessions({ blockedBy: holder.pid }, 2);
    await holder.release();
    const [refunded, paid] = [responseOf(await refund), responseOf((await payment) as RefundResult)];
    // Exactly one of them got the 1000: the other was refused for the balance.
    expect([refunded.status, paid.status].sort()).toEqual([201, 402]);
    const { balance, refunded: reserved } = await moneyOf(user.id, topup.id);
    expect(balance).toBe(0);
    expect(reserved + (paid.status === 201 ? 1000 : 0)).toBe(1000);
    // And a payment after the refund's claim, while the refund is still in flight, is refused too.
    const later = await createPayment({ userId: user.id, orderId: freshRefId("o"), amountMinor: 1, currency: "USD" });
    expect(responseOf(later as RefundResult).status).toBe(402);
  });
});

describe("refunds: the bank's word", () => {
  it("refund.succeeded delivered three times racing the reconciler: one final state, one debit", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const refundId = freshRefId("thrice");
    const made = responseOf(
      await createRefund({ userId: user.id, topupRefId: topup.refId, refundId, amountMinor: 600 }),
    );
    expect(made.body.refund.status).toBe("processing");
    const merchantRef = refundMerchantRefFor(user.id, refundId);
    const bankRefund = await waitForBankRefund(bank.url, topup.bankChargeId!, merchantRef, "succeeded");
    const row = (await findEntryByKey({ userId: user.id, type: "refund", refId: refundId }))!;
    // The request is gone (its lease expired): the reconciler may take the row over.
    await testPool().query(
      "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 second' WHERE user_id = $1 AND id = $2",
      [user.id, row.id],
    );
    const holder = await holdRowLock("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [user.id]);
    const refundLock = await holdRowLock("SELECT 1 FROM ledger_entries WHERE user_id = $1 AND id = $2 FOR UPDATE", [
      user.id,
      row.id,
    ]);
    const deliveries = [1, 2, 3].map(() => deliverRefundEvent("refund.succeeded", bankRefund, `evt_${refundId}`));
    await waitForBlockedSessions({ blockedBy: refundLock.pid }, 3);
    await refundLock.release();
    const pass = reconcileOnce(passOptions(proxy.url, [user.id]));
    await holder.release();
    const results = await Promise.all(deliveries);
    await pass;
    for (const result of results) expect(result.kind).toBe("received");
    const after = (await findEntryByKey({ userId: user.id, type: "refund", refId: refundId }))!;
    expect(after.status).toBe("succeeded");
    expect(after.bankChargeId).toBe(bankRefund.id);
    expect((await transitionsOf(user.id, row.id)).filter((t) => t.to === "succeeded")).toHaveLength(1);
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 400, refunded: 600 });
    expect(await bankRefundsOf(bank.url, topup.bankChargeId!)).toHaveLength(1);
    resetChargeCursors();
    expect((await runAudit({ userIds: [user.id], bankUrl: bank.url })).ok).toBe(true);
  });

  it("refund.failed stale vs the bank's truth: nothing given back until the bank says failed, then once", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const refundId = freshRefId("sbx-refund-fail-stale");
    responseOf(await createRefund({ userId: user.id, topupRefId: topup.refId, refundId, amountMinor: 250 }));
    const merchantRef = refundMerchantRefFor(user.id, refundId);
    const pending = await waitForBankRefund(bank.url, topup.bankChargeId!, merchantRef, "pending");
    // A signed refund.failed while the bank still says pending: a claim, not the truth. Nothing moves.
    expect(await deliverRefundEvent("refund.failed", pending, `evt_early_${refundId}`)).toEqual({
      kind: "received",
      outcome: "ignored_stale",
    });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 750, refunded: 250 });
    expect((await findEntryByKey({ userId: user.id, type: "refund", refId: refundId }))?.status).toBe("processing");
    // Once the bank says failed, the reservation comes back, exactly once however often the event arrives.
    const failed = await waitForBankRefund(bank.url, topup.bankChargeId!, merchantRef, "failed");
    const outcomes = await Promise.all(
      [1, 2, 3].map(() => deliverRefundEvent("refund.failed", failed, `evt_late_${refundId}`)),
    );
    expect(outcomes.map((o) => (o.kind === "received" ? o.outcome : o.kind)).sort()).toEqual([
      "duplicate",
      "duplicate",
      "refund_released",
    ]);
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 1000, refunded: 0 });
    const row = (await findEntryByKey({ userId: user.id, type: "refund", refId: refundId }))!;
    expect(row).toMatchObject({ status: "failed", failureReason: "declined_by_bank" });
  });

  it("a refund.succeeded for a refund that is not the row's (other amount) moves nothing: an anomaly", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const refundId = freshRefId("forged");
    responseOf(await createRefund({ userId: user.id, topupRefId: topup.refId, refundId, amountMinor: 100 }));
    const merchantRef = refundMerchantRefFor(user.id, refundId);
    const real = await waitForBankRefund(bank.url, topup.bankChargeId!, merchantRef, "pending");
    expect(await deliverRefundEvent("refund.succeeded", { ...real, amount: 99 }, `evt_forged_${refundId}`)).toEqual({
      kind: "received",
      outcome: "anomaly_refund_mismatch",
    });
    expect((await findEntryByKey({ userId: user.id, type: "refund", refId: refundId }))?.status).toBe("processing");
  });

  it("the reconciler finishes a refund whose request never reached the bank: one bank refund, then final", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const refundId = freshRefId("crashed");
    const refusal = problemStoredResponse("insufficient_funds", "x");
    // The request claimed and reserved, then died before calling the bank (its lease lasts 1 ms).
    const claimed = await claimRefund({
      key: { userId: user.id, type: "refund", refId: refundId },
      topupEntryId: topup.id,
      amountMinor: 300,
      currency: "USD",
      params: { amount: 300, currency: "USD", topupRefId: topup.refId },
      leaseOwner: "crashed-request",
      leaseMs: 1,
      actor: "admin",
      refusals: { insufficientFunds: refusal, debtOutstanding: refusal, exceedsTopup: refusal, topupDisputed: refusal },
    });
    expect(claimed.kind).toBe("reserved");
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 700, refunded: 300 });
    await testPool().query("SELECT pg_sleep(0.01)");
    const first = await reconcileOnce(passOptions(proxy.url, [user.id]));
    expect(first.examined).toBe(1);
    expect(proxy.refundPosts.get(refundMerchantRefFor(user.id, refundId))).toBe(1);
    await waitForBankRefund(bank.url, topup.bankChargeId!, refundMerchantRefFor(user.id, refundId), "succeeded");
    await testPool().query(
      "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 second' WHERE user_id = $1 AND type = 'refund' AND ref_id = $2",
      [user.id, refundId],
    );
    await reconcileOnce(passOptions(proxy.url, [user.id]));
    const row = (await findEntryByKey({ userId: user.id, type: "refund", refId: refundId }))!;
    expect(row.status).toBe("succeeded");
    expect(JSON.parse(row.response!.body).refund).toMatchObject({ refundId, status: "succeeded" });
    expect(await bankRefundsOf(bank.url, topup.bankChargeId!)).toHaveLength(1);
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 700, refunded: 300 });
  });

  it("the audit holds after refunds, and sees a reservation that differs from its refunds and a bank refund with no entry", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    responseOf(
      await createRefund({ userId: user.id, topupRefId: topup.refId, refundId: freshRefId("ok"), amountMinor: 100 }),
    );
    resetChargeCursors();
    const clean = await runAudit({ userIds: [user.id], bankUrl: bank.url });
    expect(clean.checks.filter((c) => !c.ok)).toEqual([]);
    // A refund the bank made that the ledger never claimed, and a reservation nobody made.
    const stray = await fetch(`${bank.url}/refunds`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": refundMerchantRefFor(user.id, "stray") },
      body: JSON.stringify({ chargeId: topup.bankChargeId, amount: 50 }),
    });
    expect(stray.status).toBe(201);
    await testPool().query(
      "UPDATE ledger_entries SET refunded_minor = refunded_minor + 1 WHERE user_id = $1 AND id = $2",
      [user.id, topup.id],
    );
    const report = await runAudit({ userIds: [user.id], bankUrl: bank.url });
    const failing = Object.fromEntries(report.checks.filter((c) => !c.ok).map((c) => [c.name, c.violations]));
    expect(failing).toEqual({
      refunds_within_topups: [expect.stringContaining("reserved 101, refunds not failed 100")],
      bank_refunds_recorded: [expect.stringContaining("has no ledger entry")],
    });
  });
});
