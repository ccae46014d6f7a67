/**
 * Money at the edges (contract sections 5, 11 and 12; docs/decisions/048):
 * - C26: what goes back to the card (refunds and chargebacks of one charge) never exceeds what was charged, whichever
 *   comes first, one after the other or at once: the wallet refuses a refund while a dispute is open or lost (a stored
 *   422 naming what remains), the bank refuses it too, and a dispute covers only what was not refunded;
 * - C27: money that may still come back (a refund in flight, a chargeback not reversed) counts at admission, so a
 *   give-back, which is never refused, never takes the wallet past MAX_BALANCE_MINOR;
 * - C28: a give-back the database keeps refusing is counted on its row, flagged, listed for admins and reported by
 *   the audit.
 * Each guard has its negative control below. In-process against a real PostgreSQL, Redis and sandbox bank (its
 * webhooks go nowhere: the tests deliver the bank's events, signed, to the real handler); races are staged on the
 * top-up row's lock with pg_stat_activity.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listRefundsNeedingAttention } from "@/lib/admin/list-refunds-needing-attention";
import { createBankRefundsRecordedCheck } from "@/lib/audit/checks/refunds";
import { createReturnedWithinChargeCheck } from "@/lib/audit/checks/returned-within-charge";
import type { BankDispute } from "@/lib/bank/disputes";
import { merchantRefFor } from "@/lib/bank/merchant-ref";
import { applyBankDispute } from "@/lib/chargebacks/apply-dispute";
import { env } from "@/lib/env";
import { claimRefund } from "@/lib/ledger/refunds";
import { findEntryByKey } from "@/lib/ledger/claim";
import type { LedgerEntry } from "@/lib/ledger/entry";
import type { Queryable } from "@/lib/ledger/queryable";
import { createRefund } from "@/lib/refunds/create-refund";
import { refundMerchantRefFor } from "@/lib/refunds/refund-ref";
import { createTopup } from "@/lib/topups/create-topup";
import { createTestUser, testPool } from "../helpers/db";
import { functionDefinition } from "../helpers/function-files";
import { balanceOf, dedicatedClient, freshRefId, seedBalance } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";
import { bankDisputeOf, ledgerOf, pay } from "./chargeback-fixtures";
import {
  bankRefundsOf,
  deliverRefundEvent,
  moneyOf,
  startCountingProxy,
  succeededTopup,
  waitForBankRefund,
} from "./refund-fixtures";
import { BANK_TIMEOUT_MS, backendPid, startTestBank, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;
let proxy: Awaited<ReturnType<typeof startCountingProxy>>;

beforeAll(async () => {
  bank = await startTestBank({ settleDelayMs: 30 });
  // Every bank call of the app goes through the proxy, which counts POST /refunds per key.
  proxy = await startCountingProxy(bank.url);
  process.env.BANK_URL = proxy.url;
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
  await bank?.stop();
});

const maxBalance = () => env().MAX_BALANCE_MINOR;

/** Opens a dispute on `topup`'s charge through the sandbox control, with `plan` (default: lost). */
async function openDispute(topup: LedgerEntry, plan: ("lost" | "won")[] = ["lost"]): Promise<Response> {
  return fetch(`${bank.url}/_sandbox/disputes`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ chargeId: topup.bankChargeId, plan }),
  });
}

/** Applies the bank's dispute of `topup` (as the webhook and the reconciler do) once the bank reports `status`. */
async function applyDisputeOf(topup: LedgerEntry, status: BankDispute["status"]): Promise<BankDispute> {
  const dispute = await bankDisputeOf(bank.url, merchantRefFor(topup.userId, topup.refId), status);
  await applyBankDispute(dispute, { actor: "reconciler", detail: "test: the bank's dispute" });
  return dispute;
}

/** A refund through the real operation; its status and body. */
async function refund(topup: LedgerEntry, amountMinor: number, refundId = freshRefId("rf")) {
  const result = await createRefund({ userId: topup.userId, topupRefId: topup.refId, refundId, amountMinor });
  if (result.kind !== "response") throw new Error(`refund not answered: ${JSON.stringify(result)}`);
  return { refundId, status: result.response.status, body: result.response.body, replayed: result.replayed };
}

/** Delivers the bank's final word on every refund of `topup` (its webhooks go nowhere in these tests). */
async function settleRefundsAtTheBank(topup: LedgerEntry): Promise<void> {
  for (const bankRefund of await bankRefundsOf(bank.url, topup.bankChargeId!)) {
    const settled = await waitForBankRefund(
      bank.url,
      topup.bankChargeId!,
      bankRefund.merchantRef,
      bankRefund.status === "pending" ? pendingOutcome(bankRefund.merchantRef) : bankRefund.status,
    );
    await deliverRefundEvent(
      settled.status === "succeeded" ? "refund.succeeded" : "refund.failed",
      settled,
      freshRefId("evt_settle"),
    );
  }
}

/** The sandbox's final status for a refund key: the fail switch decides (docs/bank-sandbox.md). */
function pendingOutcome(merchantRef: string): "succeeded" | "failed" {
  return merchantRef.includes(":sbx-refund-fail-") ? "failed" : "succeeded";
}

/** What went back to the card for `topup`'s charge, as the bank reports it: refunds not failed plus lost disputes. */
async function returnedAtTheBank(topup: LedgerEntry): Promise<number> {
  const refunds = (await bankRefundsOf(bank.url, topup.bankChargeId!)).filter((r) => r.status !== "failed");
  const listed = await fetch(`${bank.url}/disputes?since=2000-01-01T00:00:00Z&limit=1000`);
  const { disputes } = (await listed.json()) as { disputes: BankDispute[] };
  const lost = disputes.filter((d) => d.chargeId === topup.bankChargeId && d.status === "lost");
  return [...refunds, ...lost].reduce((sum, item) => sum + item.amount, 0);
}

async function returnedWithinChargeViolations(userId: string): Promise<string[]> {
  return (await createReturnedWithinChargeCheck({ userIds: [userId] }).run()).violations;
}

describe("C26: what goes back to the card never exceeds what was charged", () => {
  it("C26: a dispute lost first, then the refund: a stored 422 naming what remains, replayed; the bank never asked", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    expect((await openDispute(topup)).status).toBe(201);
    await applyDisputeOf(topup, "lost");
    const first = await refund(topup, 1000);
    expect(first.status).toBe(422);
    expect(JSON.parse(first.body)).toMatchObject({ code: "topup_disputed", refundableMinor: 0 });
    expect(JSON.parse(first.body).detail).toContain("Refundable now: 0.00 USD of 10.00 USD");
    const again = await refund(topup, 1000, first.refundId);
    expect(again).toEqual({ ...first, replayed: true });
    expect(proxy.refundPosts.get(refundMerchantRefFor(user.id, first.refundId))).toBeUndefined();
    expect(await ledgerOf(user.id)).toMatchObject({ balance: 0, debt: 0 });
    expect(await returnedAtTheBank(topup)).toBe(1000);
    expect(await returnedWithinChargeViolations(user.id)).toEqual([]);
  });

  it("C26: a dispute kept open: the refund waits (stored 422); once the bank closes it won, what is left can be refunded", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    expect((await openDispute(topup, [])).status).toBe(201);
    await applyDisputeOf(topup, "open");
    expect((await findEntryByKey({ userId: user.id, type: "topup", refId: topup.refId }))?.disputeStatus).toBe("open");
    const refused = await refund(topup, 400);
    expect(refused.status).toBe(422);
    expect(JSON.parse(refused.body).code).toBe("topup_disputed");
    // The bank refuses the same refund on its own (a refund of a charge whose dispute is open).
    const atTheBank = await fetch(`${bank.url}/refunds`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": freshRefId("direct") },
      body: JSON.stringify({ chargeId: topup.bankChargeId, amount: 400 }),
    });
    expect(atTheBank.status).toBe(409);
    expect(((await atTheBank.json()) as { error: { code: string } }).error.code).toBe("charge_disputed");
    // A dispute won outright (the sandbox closes a kept-open dispute never; a new top-up's does): refunds again.
    const won = await succeededTopup(user.id, 700);
    expect((await openDispute(won, ["won"])).status).toBe(201);
    await applyDisputeOf(won, "won");
    const allowed = await refund(won, 700);
    expect(allowed.status).toBe(201);
  });

  it("C26: the refund first, then the dispute: the dispute covers only what was not refunded", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    expect((await refund(topup, 250)).status).toBe(201);
    expect((await openDispute(topup)).status).toBe(201);
    const dispute = await applyDisputeOf(topup, "lost");
    expect(dispute.amount).toBe(750);
    await settleRefundsAtTheBank(topup);
    expect(await ledgerOf(user.id)).toMatchObject({
      balance: 0,
      debt: 0,
      entries: [`chargeback:${dispute.id}:750:succeeded`],
    });
    expect(await returnedAtTheBank(topup)).toBe(1000);
    // Fully refunded: nothing is left to dispute.
    const full = await succeededTopup(user.id, 300);
    expect((await refund(full, 300)).status).toBe(201);
    const refused = await openDispute(full);
    expect(refused.status).toBe(409);
    expect(await returnedWithinChargeViolations(user.id)).toEqual([]);
  });

  /**
   * The refund's claim and the dispute's landing race on the top-up row: `first` queues behind a held lock of the
   * row, then `second` behind it, and the lock is released. The dispute is already lost at the bank for the whole
   * charge (no refund reached it before), so whichever lands first, the card gets back 1000, once.
   */
  async function stagedRace(order: "refund_first" | "dispute_first") {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    expect((await openDispute(topup)).status).toBe(201);
    const dispute = await bankDisputeOf(bank.url, merchantRefFor(user.id, topup.refId), "lost");
    const holder = await dedicatedClient("c26-topup-holder");
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM ledger_entries WHERE user_id = $1 AND id = $2 FOR UPDATE", [user.id, topup.id]);
      const pid = await backendPid(holder);
      const startRefund = () => refund(topup, 1000);
      const startDispute = () => applyBankDispute(dispute, { actor: "webhook", detail: "test: raced dispute" });
      const firstRun = order === "refund_first" ? startRefund() : startDispute();
      await waitForBlockedSessions({ blockedBy: pid }, 1);
      const secondRun = order === "refund_first" ? startDispute() : startRefund();
      await waitForBlockedSessions({ blockedBy: pid }, 2);
      await holder.query("COMMIT");
      const [first, second] = await Promise.all([firstRun, secondRun]);
      const refunded = (order === "refund_first" ? first : second) as Awaited<ReturnType<typeof refund>>;
      return { user, topup, refunded };
    } finally {
      await holder.end();
    }
  }

  it("C26: refund and lost dispute at once, the refund's claim first: reserved, refused by the bank, given back; one chargeback", async () => {
    const { user, topup, refunded } = await stagedRace("refund_first");
    expect(refunded.status).toBe(201);
    expect(JSON.parse(refunded.body).refund).toMatchObject({ status: "failed", failureReason: "declined_by_bank" });
    expect(await ledgerOf(user.id)).toMatchObject({ balance: 0, debt: 0 });
    expect(await moneyOf(user.id, topup.id)).toMatchObject({ refunded: 0 });
    expect(await returnedAtTheBank(topup)).toBe(1000);
    expect(await returnedWithinChargeViolations(user.id)).toEqual([]);
  });

  it("C26: refund and lost dispute at once, the dispute first: the refund is a stored 422; one chargeback", async () => {
    const { user, topup, refunded } = await stagedRace("dispute_first");
    expect(refunded.status).toBe(422);
    expect(JSON.parse(refunded.body).code).toBe("topup_disputed");
    expect(await ledgerOf(user.id)).toMatchObject({ balance: 0, debt: 0 });
    expect(await returnedAtTheBank(topup)).toBe(1000);
    expect(proxy.refundPosts.get(refundMerchantRefFor(user.id, refunded.refundId))).toBeUndefined();
  });

  it("C26: four top-ups refunded 250..1000 while their disputes are lost, all at once: never more back than charged, no debt", async () => {
    const user = await createTestUser();
    const topups = await Promise.all([1, 2, 3, 4].map(() => succeededTopup(user.id, 1000)));
    await Promise.all(
      topups.map(async (topup, i) => {
        const [refunded, opened] = await Promise.all([refund(topup, 250 * (i + 1)), openDispute(topup)]);
        expect([201, 422]).toContain(refunded.status);
        expect([201, 409]).toContain(opened.status);
      }),
    );
    for (const topup of topups) {
      const listed = await fetch(`${bank.url}/disputes?since=2000-01-01T00:00:00Z&limit=1000`);
      const { disputes } = (await listed.json()) as { disputes: BankDispute[] };
      if (disputes.some((d) => d.chargeId === topup.bankChargeId)) await applyDisputeOf(topup, "lost");
      await settleRefundsAtTheBank(topup);
    }
    let returned = 0;
    for (const topup of topups) {
      const back = await returnedAtTheBank(topup);
      expect(back).toBeLessThanOrEqual(1000);
      returned += back;
    }
    const { balance, debt } = await ledgerOf(user.id);
    expect({ balance, debt }).toEqual({ balance: 4000 - returned, debt: 0 });
    expect(await returnedWithinChargeViolations(user.id)).toEqual([]);
  });
});

describe("C26 negative controls", () => {
  /**
   * claimRefund on a connection where ledger_claim_refund is replaced, for one rolled-back transaction, by its file's
   * text with `guard` removed (a broken copy of the guard). Returns the outcome as that transaction saw it.
   */
  async function claimThroughBroken(request: Parameters<typeof claimRefund>[0], guard: string) {
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      const real = functionDefinition("ledger_claim_refund");
      if (!real.includes(guard)) throw new Error(`the guard is no longer in the function's file: ${guard}`);
      await client.query(real.replace(guard, ""));
      return await claimRefund(request, client as unknown as Queryable);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  }

  it("without the dispute verdict in the refund's claim, a refund of a charge lost in a dispute reserves the money again (the 422 test would fail)", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    expect((await openDispute(topup)).status).toBe(201);
    await applyDisputeOf(topup, "lost");
    const refusal = { status: 422, body: "{}" };
    const request = {
      key: { userId: user.id, type: "refund" as const, refId: freshRefId("ctl") },
      topupEntryId: topup.id,
      amountMinor: 1000,
      currency: "USD",
      params: { amount: 1000, currency: "USD", topupRefId: topup.refId },
      leaseOwner: "c26-control",
      leaseMs: 30_000,
      actor: "admin" as const,
      refusals: { insufficientFunds: refusal, debtOutstanding: refusal, exceedsTopup: refusal, topupDisputed: refusal },
    };
    const verdict = "WHEN v_dispute_status IN ('open', 'lost') THEN 'topup_disputed'\n    ";
    // The chargeback took the balance to 0: without the verdict the claim stops only at the balance (402).
    const broken = await claimThroughBroken(request, verdict);
    expect(broken).toMatchObject({ kind: "stored_refusal", entry: { failureReason: "insufficient_funds" } });
    // With money on the wallet it would reserve: the charge goes back twice unless the bank refuses.
    await seedBalance(user.id, 1000);
    const reserved = await claimThroughBroken(
      { ...request, key: { ...request.key, refId: freshRefId("ctl") } },
      verdict,
    );
    expect(reserved.kind).toBe("reserved");
    const shipped = await claimRefund({ ...request, key: { ...request.key, refId: freshRefId("ctl") } });
    expect(shipped).toMatchObject({ kind: "stored_refusal", entry: { failureReason: "topup_disputed" } });
  });

  it("without the dispute noted on the top-up, the wallet asks the bank for a refund of a charge lost in a dispute (the bank alone refuses it)", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    await seedBalance(user.id, 2000);
    expect((await openDispute(topup)).status).toBe(201);
    await applyDisputeOf(topup, "lost");
    await testPool().query("UPDATE ledger_entries SET dispute_status = NULL WHERE user_id = $1 AND id = $2", [
      user.id,
      topup.id,
    ]);
    const refunded = await refund(topup, 500);
    expect(refunded.status).toBe(201);
    expect(proxy.refundPosts.get(refundMerchantRefFor(user.id, refunded.refundId))).toBe(1);
    expect(JSON.parse(refunded.body).refund).toMatchObject({ status: "failed", failureReason: "declined_by_bank" });
  });
});

describe("C27: money that may come back counts at admission", () => {
  it("C27: at the ceiling, a refund the bank will fail, a top-up meanwhile, then the failure: the top-up was refused, the money comes back in full, the ceiling holds", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    await seedBalance(user.id, maxBalance() - 1000);
    const failing = await refund(topup, 1000, freshRefId("sbx-refund-fail-c27"));
    expect(failing.status).toBe(201);
    expect(await balanceOf(user.id)).toBe(maxBalance() - 1000);
    const topupRefId = freshRefId("c27-topup");
    const refused = await createTopup({ userId: user.id, refId: topupRefId, amountMinor: 1000, currency: "USD" });
    expect(refused).toMatchObject({ kind: "response", response: { status: 422 } });
    const bankCharge = await fetch(
      `${bank.url}/charges?merchantRef=${encodeURIComponent(merchantRefFor(user.id, topupRefId))}`,
    );
    expect(bankCharge.status).toBe(404);
    const failed = await waitForBankRefund(
      bank.url,
      topup.bankChargeId!,
      refundMerchantRefFor(user.id, failing.refundId),
      "failed",
    );
    await deliverRefundEvent("refund.failed", failed, freshRefId("evt_c27"));
    expect(await balanceOf(user.id)).toBe(maxBalance());
  });

  it("C27: a chargeback not reversed counts too: a top-up refused while the reversal may still come; the reversal lands in full, within the ceiling", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    await seedBalance(user.id, maxBalance() - 1000);
    expect((await openDispute(topup, ["lost", "won"])).status).toBe(201);
    await applyDisputeOf(topup, "lost");
    expect(await balanceOf(user.id)).toBe(maxBalance() - 1000);
    const refused = await createTopup({
      userId: user.id,
      refId: freshRefId("c27-cb"),
      amountMinor: 1,
      currency: "USD",
    });
    expect(refused).toMatchObject({ kind: "response", response: { status: 422 } });
    await applyDisputeOf(topup, "won");
    expect(await ledgerOf(user.id)).toMatchObject({ balance: maxBalance(), debt: 0 });
  });
});

describe("C27 negative controls: ledger_pending_credits_minor with one part removed, in a rolled-back transaction", () => {
  /** Claims a fresh top-up key through ledger_claim_topup on `db`; returns the row's status. */
  async function claimStatus(db: Queryable, userId: string, amountMinor: number): Promise<string | undefined> {
    const { rows } = await db.query<{ status: string }>(
      `SELECT status FROM ledger_claim_topup($1, $2, $3, 'USD', repeat('a', 64), '{}'::jsonb, 'w', 30000, 'request', $4, 422::smallint, '{}')`,
      [userId, freshRefId("c27-ctl"), amountMinor, maxBalance()],
    );
    return rows[0]?.status;
  }

  /** The status of a claim that does not fit beside the pending credits, with the helper's `part` removed. */
  async function withoutPart(userId: string, part: string, replacement: string, amountMinor: number) {
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      const definition = functionDefinition("ledger_pending_credits_minor");
      if (!definition.includes(part)) throw new Error(`the helper no longer holds: ${part}`);
      await client.query(definition.replace(part, replacement));
      return await claimStatus(client as unknown as Queryable, userId, amountMinor);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  }

  it("without unfinished refunds among the pending credits, a top-up that the failed refund's give-back would push past the ceiling is admitted", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    await seedBalance(user.id, maxBalance() - 1000);
    expect((await refund(topup, 1000, freshRefId("sbx-refund-fail-ctl"))).status).toBe(201);
    expect(await claimStatus(testPool() as unknown as Queryable, user.id, 1000)).toBe("failed");
    expect(await withoutPart(user.id, "'refund'", "'none'", 1000)).toBe("processing");
  });

  it("without chargebacks not reversed among the pending credits, a top-up that the reversal would push past the ceiling is admitted", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    await seedBalance(user.id, maxBalance() - 1000);
    expect((await openDispute(topup)).status).toBe(201);
    await applyDisputeOf(topup, "lost");
    expect(await claimStatus(testPool() as unknown as Queryable, user.id, 1000)).toBe("failed");
    expect(await withoutPart(user.id, "c.type = 'chargeback'", "false", 1000)).toBe("processing");
  });
});

describe("C28: a give-back the database keeps refusing is counted, flagged, listed and audited", () => {
  /** Makes every balance change of `userId`'s wallet fail as the balance's CHECK would, until dropped. */
  async function refuseWalletUpdates(userId: string): Promise<() => Promise<void>> {
    const name = `c28_refuse_${freshRefId("t")
      .replace(/[^a-z0-9]/gi, "")
      .slice(-12)
      .toLowerCase()}`;
    await testPool().query(
      `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         RAISE EXCEPTION 'test: the balance CHECK refuses' USING ERRCODE = 'check_violation', CONSTRAINT = 'wallets_balance_range';
       END $$`,
    );
    await testPool().query(
      `CREATE TRIGGER ${name} BEFORE UPDATE ON wallets FOR EACH ROW WHEN (NEW.user_id = '${userId}') EXECUTE FUNCTION ${name}()`,
    );
    return async () => {
      await testPool().query(`DROP TRIGGER IF EXISTS ${name} ON wallets`);
      await testPool().query(`DROP FUNCTION IF EXISTS ${name}()`);
    };
  }

  it("C28: a failed refund whose release the database refuses: each delivery counted, flagged at SETTLE_ATTEMPTS_MAX, listed, audited; it lands once the database takes it", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const failing = await refund(topup, 400, freshRefId("sbx-refund-fail-c28"));
    expect(failing.status).toBe(201);
    const failed = await waitForBankRefund(
      bank.url,
      topup.bankChargeId!,
      refundMerchantRefFor(user.id, failing.refundId),
      "failed",
    );
    const key = { userId: user.id, type: "refund" as const, refId: failing.refundId };
    const stuck = createBankRefundsRecordedCheck(
      { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS },
      { userIds: [user.id] },
      { stuckAfterS: 0 },
    );
    const restore = await refuseWalletUpdates(user.id);
    try {
      for (let delivery = 1; delivery <= env().SETTLE_ATTEMPTS_MAX; delivery++) {
        await expect(deliverRefundEvent("refund.failed", failed, freshRefId("evt_c28"))).rejects.toThrow(
          "the balance CHECK refuses",
        );
        const row = await findEntryByKey(key);
        expect(row).toMatchObject({ status: "processing", settleFailures: delivery });
        expect(row?.settleFlaggedAt === null).toBe(delivery < env().SETTLE_ATTEMPTS_MAX);
      }
      const listed = await listRefundsNeedingAttention(100);
      expect(listed.find((r) => r.refundId === failing.refundId)).toMatchObject({
        topupRefId: topup.refId,
        settleFailures: env().SETTLE_ATTEMPTS_MAX,
        settleLastError: "check violation on wallets_balance_range",
      });
      const report = await stuck.run();
      expect(report.ok).toBe(false);
      expect(report.violations.join("\n")).toContain(`refund ${failing.refundId}`);
    } finally {
      await restore();
    }
    await deliverRefundEvent("refund.failed", failed, freshRefId("evt_c28"));
    expect(await findEntryByKey(key)).toMatchObject({ status: "failed", failureReason: "declined_by_bank" });
    expect(await balanceOf(user.id)).toBe(1000);
    expect((await listRefundsNeedingAttention(100)).some((r) => r.refundId === failing.refundId)).toBe(false);
    expect((await stuck.run()).ok).toBe(true);
  });

  it("negative control: the audit judges a refund the bank finished only past STUCK_AFTER_S; a recent one is not reported", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const failing = await refund(topup, 400, freshRefId("sbx-refund-fail-c28ctl"));
    await waitForBankRefund(bank.url, topup.bankChargeId!, refundMerchantRefFor(user.id, failing.refundId), "failed");
    const bankOptions = { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS };
    const scope = { userIds: [user.id] };
    expect((await createBankRefundsRecordedCheck(bankOptions, scope, { stuckAfterS: 3600 }).run()).ok).toBe(true);
    expect((await createBankRefundsRecordedCheck(bankOptions, scope, { stuckAfterS: 0 }).run()).ok).toBe(false);
  });

  it("C28: the settings that let a release reach the balance's CHECK are refused at start; below them a release at the old edge would break it", async () => {
    // The edge the settings now refuse: a ceiling of 2^52 and amounts of 2^52 let a release of 2^52 reach 2^53.
    const user = await createTestUser();
    await seedBalance(user.id, 2 ** 52);
    await expect(
      testPool().query("UPDATE wallets SET balance_minor = balance_minor + $2 WHERE user_id = $1", [user.id, 2 ** 52]),
    ).rejects.toMatchObject({ code: "23514", constraint: "wallets_balance_range" });
  });
});

describe("C26 and the pay path: a chargeback of money spent still becomes debt, once", () => {
  it("a dispute lost after the money was spent: balance 0 and debt, and no refund can be claimed", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    expect(await pay(user.id, 800)).toEqual({ status: 201, code: null });
    expect((await openDispute(topup)).status).toBe(201);
    await applyDisputeOf(topup, "lost");
    expect(await ledgerOf(user.id)).toMatchObject({ balance: 0, debt: 800 });
    expect((await refund(topup, 100)).status).toBe(422);
  });
});
