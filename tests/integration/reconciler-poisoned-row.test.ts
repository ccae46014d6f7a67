/**
 * Case C29: one poisoned row must not stop the reconciler's pass. Real PostgreSQL, a real sandbox bank, the real pass
 * (lib/reconciler/reconcile-once.ts); the faults are staged deterministically (tests/integration/poisoned-row-fixtures.ts):
 * a test trigger that raises XX001 on one row's settlement, and a wallet row locked by a transaction held open in
 * another connection until pg_stat_activity shows the reconciler waiting on it.
 *
 * Negative controls (the same scenarios with the row isolation, or the row's statement timeout, removed) are in
 * tests/integration/reconciler-poisoned-row-control.test.ts; the admin endpoint's partial answer is in
 * tests/integration/reconciler-admin-partial.test.ts, and a database lost mid-pass in
 * tests/integration/reconciler-database-down.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { env } from "@/lib/env";
import { findEntryByKey } from "@/lib/ledger/claim";
import { resetChargeCursors } from "@/lib/reconciler/charge-cursor";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { createRefund } from "@/lib/refunds/create-refund";
import { refundMerchantRefFor } from "@/lib/refunds/refund-ref";
import { freePort } from "@/scripts/lib/ports";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf, freshRefId } from "../helpers/ledger";
import { bankDisputeOf, ledgerOf } from "./chargeback-fixtures";
import { reconcileDisputes } from "@/lib/chargebacks/reconcile-disputes";
import {
  assertDisputeIsolated,
  assertOthersFinished,
  assertRowWaitBounded,
  disputeStepWithPoisonedChargeback,
  passBehindLockedWallet,
  passWithPoisonedRow,
  poisonRow,
  settleFailuresOf,
} from "./poisoned-row-fixtures";
import { passOptions, startTestBank, stuckTopup, waitForChargeStatus, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank();
  // Only the refund below is made by a request, and its bank call must not land (the row stays in flight for the
  // reconciler): BANK_URL names a port nothing listens on. Every pass here is given the real bank explicitly.
  process.env.BANK_URL = `http://127.0.0.1:${await freePort()}`;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

/** Moves the row's lease into the past (test setup, as reconciler-fixtures' stuckTopup does): a pass may take it. */
async function expireLease(userId: string, entryId: number): Promise<void> {
  await testPool().query(
    "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 second' WHERE user_id = $1 AND id = $2",
    [userId, entryId],
  );
}

describe("C29: one poisoned row does not stop the reconciler's pass", () => {
  it("C29: a row whose settlement raises an unexpected SQLSTATE (XX001): the other rows are credited, that one is named, counted and left; the pass does not throw", async () => {
    assertOthersFinished(await passWithPoisonedRow(bank.url));
  });

  it("C29: a row whose wallet stays locked costs that row its own statement timeout, not the pass: the others are credited while the lock is held, and a later pass credits it", async () => {
    const outcome = await passBehindLockedWallet(bank.url);
    assertRowWaitBounded(outcome);
    // The lock is gone: once its lease expires, the row is settled like any other, once.
    await expireLease(outcome.locked.ref.userId, outcome.locked.ref.entryId);
    resetChargeCursors();
    const next = await reconcileOnce(passOptions(bank.url, [outcome.locked.ref.userId]));
    expect(next).toMatchObject({ completed: 1 });
    expect(next.errored).toBeUndefined();
    expect(await balanceOf(outcome.locked.ref.userId)).toBe(outcome.locked.entry.amountMinor);
  });

  it("C29: after a poisoned row the dispute step still runs; the row is counted once per pass and flagged after SETTLE_ATTEMPTS_MAX passes", async () => {
    const poisonedUser = await createTestUser();
    const disputedUser = await createTestUser();
    const poisoned = await stuckTopup(poisonedUser.id, { amountMinor: 700, chargeAt: bank.url });
    // The sandbox opens a dispute on this charge and loses it (docs/bank-sandbox.md, `sbx-dispute-`).
    const disputed = await stuckTopup(disputedUser.id, {
      amountMinor: 500,
      refId: freshRefId("sbx-dispute-c29"),
      chargeAt: bank.url,
    });
    await waitForChargeStatus(bank.url, poisoned.merchantRef, "succeeded");
    await bankDisputeOf(bank.url, disputed.merchantRef, "lost");
    const poison = await poisonRow(poisoned.entry);
    try {
      resetChargeCursors();
      const first = await reconcileOnce(passOptions(bank.url, [poisonedUser.id, disputedUser.id]));
      expect(first).toMatchObject({ completed: 1, errored: 1 });
      // The disputed top-up was credited and its lost dispute charged back in the same pass, after the poisoned row.
      expect(await ledgerOf(disputedUser.id)).toMatchObject({ balance: 0, debt: 0, entries: [expect.any(String)] });
      expect((await settleFailuresOf(poisoned.entry)).failures).toBe(1);

      const attemptsMax = env().SETTLE_ATTEMPTS_MAX;
      for (let pass = 2; pass <= attemptsMax; pass++) {
        await expireLease(poisonedUser.id, poisoned.entry.id);
        const result = await reconcileOnce(passOptions(bank.url, [poisonedUser.id]));
        // Both directions meet the row each pass (its lease, its charge): it is counted once.
        expect(result.errored).toBe(1);
        expect((await settleFailuresOf(poisoned.entry)).failures).toBe(pass);
        if (pass === attemptsMax)
          expect(result.anomalies?.[0]?.detail).toContain(
            `failure ${attemptsMax} of ${attemptsMax} on this row, flagged`,
          );
      }
      expect(await settleFailuresOf(poisoned.entry)).toMatchObject({
        failures: attemptsMax,
        flagged: true,
        status: "processing",
      });
      expect(await balanceOf(poisonedUser.id)).toBe(0);
    } finally {
      await poison.drop();
    }
    // Once the fault is gone the row settles like any other, once.
    await expireLease(poisonedUser.id, poisoned.entry.id);
    expect(await reconcileOnce(passOptions(bank.url, [poisonedUser.id]))).toMatchObject({ completed: 1 });
    expect(await balanceOf(poisonedUser.id)).toBe(700);
  });

  it("C29: a dispute whose chargeback the database refuses (XX001) is reported with its merchant reference and charge id; the next dispute still lands", async () => {
    const outcome = await disputeStepWithPoisonedChargeback(bank.url, reconcileDisputes);
    assertDisputeIsolated(outcome);
    // Through the whole pass (both chargebacks poisoned then): both top-ups credited, both disputes named, no throw.
    expect(outcome.setupPass).toMatchObject({ completed: 2, errored: 2 });
    expect(outcome.setupPass.anomalies?.map((a) => [a.kind, a.merchantRef, a.detail.slice(0, 8)])).toEqual([
      ["row_error", outcome.poisoned.merchantRef, "dispute "],
      ["row_error", outcome.other.merchantRef, "dispute "],
    ]);
  });

  it("C29: a dispute whose work failed is asked for again by id in the next pass, though the cursor has moved past it, and lands", async () => {
    const outcome = await disputeStepWithPoisonedChargeback(bank.url, reconcileDisputes);
    assertDisputeIsolated(outcome);
    const userIds = [outcome.poisoned.ref.userId, outcome.other.ref.userId];
    // The poison is gone; nothing new at the bank: only the retry can land it.
    const next = await reconcileDisputes({
      bank: { bankUrl: bank.url, timeoutMs: 5000 },
      userIds,
      lookBackMs: 24 * 3600_000,
      logger: passOptions(bank.url, userIds).logger,
    });
    expect(next).toMatchObject({ listed: 0, retried: 1, landed: 1, errors: [] });
    expect((await ledgerOf(outcome.poisoned.ref.userId)).entries).toHaveLength(1);
  });

  it("C29: a refund row whose settlement fails is named by its own merchant reference (refund:<userId>:<refundId>, not a top-up's) and counted on the refund row", async () => {
    const user = await createTestUser();
    const topup = await stuckTopup(user.id, { amountMinor: 1000, chargeAt: bank.url });
    await waitForChargeStatus(bank.url, topup.merchantRef, "succeeded");
    resetChargeCursors();
    expect(await reconcileOnce(passOptions(bank.url, [user.id]))).toMatchObject({ completed: 1 });
    // The refund's request cannot reach the bank (BANK_URL is closed): its row stays in flight for the reconciler.
    const refundId = freshRefId("c29-refund");
    const made = await createRefund({ userId: user.id, topupRefId: topup.refId, refundId, amountMinor: 300 });
    expect(made.kind).toBe("response");
    const refund = (await findEntryByKey({ userId: user.id, type: "refund", refId: refundId }))!;
    expect(refund.status).toBe("processing");
    await expireLease(user.id, refund.id);
    const poison = await poisonRow(refund);
    try {
      resetChargeCursors();
      const result = await reconcileOnce(passOptions(bank.url, [user.id]));
      expect(result.errored).toBe(1);
      expect(result.anomalies).toEqual([
        {
          kind: "row_error",
          merchantRef: refundMerchantRefFor(user.id, refundId),
          chargeId: null,
          detail: expect.stringMatching(/XX001.*failure 1 of \d+ on this row/),
        },
      ]);
      expect(result.anomalies?.[0]?.merchantRef).not.toMatch(/^topup:/);
      expect(await settleFailuresOf(refund)).toMatchObject({ failures: 1, status: "processing" });
    } finally {
      await poison.drop();
    }
  });
});
