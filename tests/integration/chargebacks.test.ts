/**
 * Chargebacks and debt (contract section 12; invariant 7.1 with debt): a dispute the bank lost debits the wallet
 * once, into debt where the money was already spent (never a negative balance); payments are refused with
 * 402 debt_outstanding while the debt is open; credits repay it first; a dispute lost then reversed moves money once
 * each way; dispute events delivered several times and racing the reconciler land one entry each; a stale or forged
 * event (the bank says otherwise) moves nothing.
 *
 * In-process against a real PostgreSQL, Redis and a real sandbox bank: top-ups and payments go through the request
 * path (lib/topups, lib/payments), dispute events through the real webhook handler with the exact bytes the bank
 * queued (read from its delivery log, signed with the app's secret), the reconciler through reconcileOnce. The race
 * is staged on the wallet row's lock, released once every contender is queued behind it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAudit } from "@/lib/audit/run-audit";
import { applyBankDispute } from "@/lib/chargebacks/apply-dispute";
import { createDisputesCheck } from "@/lib/chargebacks/audit-disputes";
import { listOpenDisputes } from "@/lib/chargebacks/list-open-disputes";
import { listTopupChargebacks } from "@/lib/chargebacks/list-topup-chargebacks";
import { resetDisputeCursors } from "@/lib/chargebacks/reconcile-disputes";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { getWallet } from "@/lib/wallet/get-wallet";
import { createTestUser } from "../helpers/db";
import { dedicatedClient, freshRefId } from "../helpers/ledger";
import {
  bankDisputeOf,
  deliver,
  disputeEventBodies,
  ledgerOf,
  openDisputeKeptOpen,
  pay,
  topUp,
} from "./chargeback-fixtures";
import { BANK_TIMEOUT_MS, backendPid, passOptions, startTestBank, type TestBank } from "./reconciler-fixtures";
import { waitForBlockedSessions } from "../helpers/wait";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank({ settleDelayMs: 30 });
  // The request path charges BANK_URL and the webhook asks it (lib/env.ts reads it on first use, after this line).
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

async function auditOf(userId: string) {
  const report = await runAudit({ userIds: [userId], bankUrl: bank.url, bankTimeoutMs: BANK_TIMEOUT_MS });
  return report.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.violations.join("; ")}`);
}

describe("chargebacks and debt", () => {
  it("a lost dispute on a wallet that already spent the money: balance 0 and debt = amount, payments 402, top-ups repay the debt first", async () => {
    const user = await createTestUser();
    const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-spent"), 5000);
    expect(await pay(user.id, 4000)).toEqual({ status: 201, code: null });
    const dispute = await bankDisputeOf(bank.url, merchantRef, "lost");
    for (const body of await disputeEventBodies(bank.url, merchantRef)) await deliver(body);

    // Balance 1000 covers part of the 5000: balance 0, debt 4000; net position -4000 = 1000 - 5000, exactly.
    expect(await ledgerOf(user.id)).toEqual({
      balance: 0,
      debt: 4000,
      entries: [`chargeback:${dispute.id}:5000:succeeded`],
    });
    expect(await getWallet(user.id)).toEqual({ balance: 0, debt: 4000, currency: "USD" });
    expect(await pay(user.id, 1)).toEqual({ status: 402, code: "debt_outstanding" });
    expect(await auditOf(user.id)).toEqual([]);

    // A top-up smaller than the debt goes to the debt entirely; payments stay refused.
    await topUp(user.id, freshRefId("repay1"), 1500);
    expect(await getWallet(user.id)).toEqual({ balance: 0, debt: 2500, currency: "USD" });
    expect(await pay(user.id, 1)).toEqual({ status: 402, code: "debt_outstanding" });
    // The next repays the rest; what is left is the balance, and payments are back.
    await topUp(user.id, freshRefId("repay2"), 3000);
    expect(await getWallet(user.id)).toEqual({ balance: 500, currency: "USD" });
    expect(await pay(user.id, 500)).toEqual({ status: 201, code: null });
    expect(await auditOf(user.id)).toEqual([]);
  });

  it("a dispute lost then reversed (sbx-dispute-reversed-) moves money once each way, whatever the order and number of deliveries", async () => {
    const user = await createTestUser();
    const refId = freshRefId("sbx-dispute-reversed-r");
    const merchantRef = await topUp(user.id, refId, 3000);
    const dispute = await bankDisputeOf(bank.url, merchantRef, "won");
    const bodies = await disputeEventBodies(bank.url, merchantRef);
    expect(bodies).toHaveLength(3); // disputed, closed lost, closed won
    const outcomes: string[] = [];
    // Newest first, each three times: the first delivery lands both entries from the bank's word.
    for (const body of [...bodies].reverse()) for (let i = 0; i < 3; i++) outcomes.push(await deliver(body));
    expect(outcomes.filter((o) => o === "chargeback")).toHaveLength(1);
    expect(outcomes.filter((o) => o !== "chargeback")).toEqual(Array(8).fill("duplicate"));
    expect(await ledgerOf(user.id)).toEqual({
      balance: 3000,
      debt: 0,
      entries: [`chargeback:${dispute.id}:3000:succeeded`, `chargeback_reversal:${dispute.id}:3000:succeeded`],
    });
    // The admin's timeline page of the disputed top-up lists both entries; the other top-up's lists none.
    const listed = await listTopupChargebacks(user.id, refId);
    expect(listed.map((e) => `${e.type}:${e.refId}:${e.amountMinor}:${e.status}`).sort()).toEqual([
      `chargeback:${dispute.id}:3000:succeeded`,
      `chargeback_reversal:${dispute.id}:3000:succeeded`,
    ]);
    // Another of the user's top-ups, never disputed: its page lists no chargeback.
    const otherRefId = freshRefId("undisputed");
    await topUp(user.id, otherRefId, 100);
    expect(await listTopupChargebacks(user.id, otherRefId)).toEqual([]);
    expect(await auditOf(user.id)).toEqual([]);
  });

  it("the reversal in order: the chargeback debits, the reversal credits back through the debt first", async () => {
    const user = await createTestUser();
    const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-reversed-o"), 2000);
    await pay(user.id, 2000);
    const lost = await bankDisputeOf(bank.url, merchantRef, "won");
    // The bank's word at the time of the lost event: lost (the test applies it as the bank reported it then).
    await applyBankDispute({ ...lost, status: "lost" }, { actor: "webhook", detail: "test: lost first" });
    expect(await ledgerOf(user.id)).toMatchObject({ balance: 0, debt: 2000 });
    await applyBankDispute(lost, { actor: "webhook", detail: "test: then reversed" });
    expect(await ledgerOf(user.id)).toMatchObject({ balance: 0, debt: 0 });
    expect(await auditOf(user.id)).toEqual([]);
  });

  it("applied again, each entry is already there and nothing moves; another amount under the same dispute id is an anomaly", async () => {
    const user = await createTestUser();
    const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-reversed-a"), 2000);
    const reversed = await bankDisputeOf(bank.url, merchantRef, "won");
    const door = { actor: "reconciler", detail: "test: applied twice" } as const;
    const first = await applyBankDispute(reversed, door);
    expect(first).toMatchObject({
      kind: "applied",
      entries: [
        { type: "chargeback", result: "landed" },
        { type: "chargeback_reversal", result: "landed" },
      ],
    });
    const again = await applyBankDispute(reversed, door);
    if (first.kind !== "applied") throw new Error("expected applied");
    expect(again).toEqual({
      kind: "applied",
      entries: first.entries.map((landed) => ({ ...landed, result: "already" })),
    });
    expect(await applyBankDispute({ ...reversed, amount: reversed.amount - 1 }, door)).toEqual({
      kind: "anomaly",
      detail: `chargeback ${reversed.id}: an entry under this dispute id records another amount or charge`,
    });
    expect(await ledgerOf(user.id)).toMatchObject({ balance: 2000, debt: 0 });
  });

  it("dispute events delivered several times at once, racing the reconciler: one chargeback, one debit", async () => {
    const user = await createTestUser();
    const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-race"), 2500);
    const dispute = await bankDisputeOf(bank.url, merchantRef, "lost");
    const bodies = await disputeEventBodies(bank.url, merchantRef);
    // Hold the wallet row: the first contender's debit waits on it, every other waits on that contender's claim.
    const holder = await dedicatedClient("chargeback-race-holder");
    await holder.query("BEGIN");
    await holder.query("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [user.id]);
    resetDisputeCursors();
    const deliveries = [...bodies, ...bodies, ...bodies].map((body) => deliver(body));
    const pass = reconcileOnce(passOptions(bank.url, [user.id]));
    // The lost event (3 copies) and the reconciler contend; the disputed event asks the bank and finds it lost too.
    await waitForBlockedSessions({ blockedBy: await backendPid(holder) }, 7, 20_000);
    await holder.query("COMMIT");
    await holder.end();
    const outcomes = await Promise.all(deliveries);
    await pass;
    expect(outcomes.filter((o) => o === "chargeback").length).toBeLessThanOrEqual(1);
    expect(await ledgerOf(user.id)).toEqual({
      balance: 0,
      debt: 0,
      entries: [`chargeback:${dispute.id}:2500:succeeded`],
    });
    expect(await auditOf(user.id)).toEqual([]);
  });

  it("the reconciler lands a lost dispute whose webhooks never arrived, once, however many passes", async () => {
    const user = await createTestUser();
    const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-nohook"), 1200);
    const dispute = await bankDisputeOf(bank.url, merchantRef, "lost");
    resetDisputeCursors();
    for (let i = 0; i < 3; i++) await reconcileOnce(passOptions(bank.url, [user.id]));
    resetDisputeCursors(); // a restarted process re-reads the look-back window
    await reconcileOnce(passOptions(bank.url, [user.id]));
    expect(await ledgerOf(user.id)).toEqual({
      balance: 0,
      debt: 0,
      entries: [`chargeback:${dispute.id}:1200:succeeded`],
    });
    // The webhooks arriving late find it landed.
    for (const body of await disputeEventBodies(bank.url, merchantRef)) expect(await deliver(body)).toBe("duplicate");
  });

  it("stale or forged dispute events (the bank says otherwise) move nothing", async () => {
    const user = await createTestUser();
    const merchantRef = await topUp(user.id, freshRefId("plain"), 1800);
    // A dispute the bank keeps open, and a forged "closed lost" for it, signed with the app's secret.
    const { chargeId, dispute: open } = await openDisputeKeptOpen(bank.url, merchantRef);
    const data = { chargeId, merchantRef, amount: 1800, currency: "USD" };
    const forged = (disputeId: string, extra: Record<string, unknown> = {}) =>
      JSON.stringify({
        id: freshRefId("evt_forged"),
        type: "charge.dispute_closed",
        created: new Date().toISOString(),
        data: { ...data, disputeId, outcome: "lost", ...extra },
      });
    expect(await deliver(forged(open.id))).toBe("ignored_stale");
    // A dispute the bank does not have.
    expect(await deliver(forged("dp_000000000000000000000000"))).toBe("anomaly_unknown_dispute");
    // A real lost dispute of another user's charge, named in an event about this user's charge.
    const other = await createTestUser();
    const otherRef = await topUp(other.id, freshRefId("sbx-dispute-other"), 1800);
    const otherDispute = await bankDisputeOf(bank.url, otherRef, "lost");
    expect(await deliver(forged(otherDispute.id))).toBe("anomaly_dispute");
    // A dispute won outright: its (stale or forged) "lost" moves nothing.
    const wonRef = await topUp(user.id, freshRefId("sbx-dispute-won-w"), 700);
    const won = await bankDisputeOf(bank.url, wonRef, "won");
    expect(
      await deliver(
        JSON.stringify({
          id: freshRefId("evt_stale"),
          type: "charge.dispute_closed",
          created: new Date().toISOString(),
          data: {
            chargeId: won.chargeId,
            merchantRef: wonRef,
            amount: 700,
            currency: "USD",
            disputeId: won.id,
            outcome: "lost",
          },
        }),
      ),
    ).toBe("ignored_stale");
    expect(await ledgerOf(user.id)).toEqual({ balance: 2500, debt: 0, entries: [] });
    expect(await auditOf(user.id)).toEqual([]);
  });

  it("the audit finds a lost dispute nobody charged back, and a chargeback the bank never lost; the admin lists open disputes", async () => {
    const user = await createTestUser();
    const check = () =>
      createDisputesCheck(
        { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS },
        { userIds: [user.id] },
        { stuckAfterS: 0 },
      ).run();
    const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-audit"), 900);
    const lost = await bankDisputeOf(bank.url, merchantRef, "lost");
    // Lost at the bank, no webhook delivered and no reconciler pass yet: the check names it.
    const missing = await check();
    expect(missing.ok).toBe(false);
    expect(missing.violations).toEqual([expect.stringContaining(`dispute ${lost.id}`)]);
    resetDisputeCursors();
    await reconcileOnce(passOptions(bank.url, [user.id]));
    expect(await check()).toMatchObject({ ok: true, violations: [] });

    // A dispute the bank keeps open, listed for the admin; a chargeback landed for it anyway (as a handler that
    // believed a forged event would) is a violation.
    const openRef = await topUp(user.id, freshRefId("audit-open"), 400);
    const { dispute: opened } = await openDisputeKeptOpen(bank.url, openRef);
    const listed = await listOpenDisputes({ bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS });
    expect(listed.kind === "listed" && listed.disputes.map((d) => d.id)).toContain(opened.id);
    expect(listed.kind === "listed" && listed.disputes.map((d) => d.id)).not.toContain(lost.id);
    await applyBankDispute(
      { ...opened, status: "lost", lostAt: new Date().toISOString() },
      { actor: "admin", detail: "test: a chargeback the bank never lost" },
    );
    const forged = await check();
    expect(forged.ok).toBe(false);
    expect(forged.violations).toEqual([expect.stringContaining(`dispute ${opened.id} is open at the bank`)]);
  });
});
