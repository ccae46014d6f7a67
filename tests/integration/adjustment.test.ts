/**
 * Adjustments (contract section 5; invariants 7.1, 7.2): a bank charge that succeeded for a top-up whose row had
 * already failed is credited exactly once, by an `adjustment` entry linked to the top-up, whoever gets there first:
 * the webhook (the real handler, signed bytes in) or the reconciler, racing. The failed row and its stored response
 * never change. In-process against a real PostgreSQL and a real sandbox bank; the race is staged on the wallet
 * row's lock, released only once all three contenders are queued behind it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAudit } from "@/lib/audit/run-audit";
import { createCharge } from "@/lib/bank/client";
import { signWebhook } from "@/lib/bank/signature";
import { findEntryByKey } from "@/lib/ledger/claim";
import { failEntry, getEntryById, markProcessing } from "@/lib/ledger/transitions";
import { resetChargeCursors } from "@/lib/reconciler/charge-cursor";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { createTopup } from "@/lib/topups/create-topup";
import { storeFinishedTopupResponse } from "@/lib/topups/topup-response";
import { handleBankWebhook } from "@/lib/webhooks/handle-bank-webhook";
import { listEntries } from "@/lib/wallet/list-entries";
import { createTestUser, testPool } from "../helpers/db";
import {
  balanceOf,
  claimEntry,
  claimRequest,
  dedicatedClient,
  freshRefId,
  seedBalance,
  transitionsOf,
} from "../helpers/ledger";
import { testStack } from "../helpers/stack";
import {
  BANK_TIMEOUT_MS,
  backendPid,
  passOptions,
  startTestBank,
  storedResponseOf,
  waitForChargeStatus,
  type TestBank,
} from "./reconciler-fixtures";
import { waitForBlockedSessions } from "../helpers/wait";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank();
  // The webhook asks BANK_URL before an adjustment (lib/env.ts reads it on first use, after this line).
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

const AMOUNT_MINOR = 2750;

/**
 * A top-up that failed (an admin gave it up as expired, its 201 `failed` stored) while its charge then succeeded at
 * the bank: money taken, nothing credited. Returns the row, its stored response and the charge's event data.
 */
async function failedTopupWithSucceededCharge(chargeEnds: "succeeded" | "declined" = "succeeded") {
  const user = await createTestUser();
  // The sandbox declines a charge whose ref id starts with sbx-decline- (docs/bank-sandbox.md).
  const refId = freshRefId(chargeEnds === "declined" ? "sbx-decline-adj" : "adj");
  const claim = await claimEntry(claimRequest(user.id, { refId, amountMinor: AMOUNT_MINOR }));
  const ref = { userId: user.id, entryId: claim.id };
  await markProcessing(ref, claim.fencingToken);
  await failEntry(ref, { actor: "admin", guard: { kind: "status_only" }, reason: "expired" });
  const failed = (await getEntryById(ref))!;
  await storeFinishedTopupResponse(failed);
  const stored = await storedResponseOf(user.id, failed.id);
  const merchantRef = `topup:${user.id}:${refId}`;
  const charged = await createCharge(
    { merchantRef, amountMinor: AMOUNT_MINOR, currency: "USD" },
    { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS },
  );
  if (charged.kind !== "charge") throw new Error("the bank did not charge");
  await waitForChargeStatus(bank.url, merchantRef, chargeEnds);
  const data = { chargeId: charged.charge.id, merchantRef, amount: AMOUNT_MINOR, currency: "USD" };
  return { user, refId, failed, stored: stored!, data };
}

/** The real handler, as the route calls it: signed bytes in. Returns the recorded outcome. */
async function deliverSuccess(eventId: string, data: Record<string, unknown>): Promise<string> {
  const rawBody = JSON.stringify({ id: eventId, type: "charge.succeeded", data });
  const secrets = testStack().webhookSecrets.split(",");
  const result = await handleBankWebhook(
    Buffer.from(rawBody),
    signWebhook(rawBody, secrets, Math.floor(Date.now() / 1000)),
  );
  if (result.kind !== "received") throw new Error(`handler answered ${JSON.stringify(result)}`);
  return result.outcome;
}

async function adjustmentRows(userId: string): Promise<number> {
  const result = await testPool().query<{ n: number }>(
    "SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = $1 AND type = 'adjustment'",
    [userId],
  );
  return result.rows[0]?.n ?? 0;
}

describe("adjustments: a succeeded charge whose top-up already failed", () => {
  it("the webhook and two reconciler passes racing: exactly one adjustment, one credit; the failed row replays unchanged", async () => {
    const { user, refId, failed, stored, data } = await failedTopupWithSucceededCharge();
    await seedBalance(user.id, 0);
    resetChargeCursors();

    const holder = await dedicatedClient("adjustment-wallet-holder");
    let outcomes: [string, Awaited<ReturnType<typeof reconcileOnce>>, Awaited<ReturnType<typeof reconcileOnce>>];
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [user.id]);
      const racing = Promise.all([
        deliverSuccess(`evt_adj_${refId}`, data),
        reconcileOnce(passOptions(bank.url, [user.id])),
        reconcileOnce(passOptions(bank.url, [user.id])),
      ]);
      // The first claimant waits on the wallet (its credit), the other two on its uncommitted adjustment row.
      await waitForBlockedSessions({ blockedBy: await backendPid(holder) }, 3, 20_000);
      await holder.query("COMMIT");
      outcomes = await racing;
    } finally {
      await holder.end();
    }
    const [webhook, first, second] = outcomes;
    const adjustedByWebhook = webhook === "adjusted" ? 1 : 0;
    expect(adjustedByWebhook + first.completed + second.completed).toBe(1);
    expect(["adjusted", "duplicate"]).toContain(webhook);

    expect(await adjustmentRows(user.id)).toBe(1);
    expect(await balanceOf(user.id)).toBe(AMOUNT_MINOR);
    // Keyed by the charge id (contract section 5), linked to the failed top-up.
    const adjustment = await findEntryByKey({ userId: user.id, type: "adjustment", refId: data.chargeId });
    expect(adjustment).toMatchObject({
      status: "succeeded",
      amountMinor: AMOUNT_MINOR,
      adjustsEntryId: failed.id,
      params: { amount: AMOUNT_MINOR, currency: "USD", chargeId: data.chargeId },
    });
    expect((await transitionsOf(user.id, adjustment!.id)).map((t) => t.to)).toEqual(["initiated", "succeeded"]);

    // The failed row did not move, and its stored first response replays byte for byte.
    expect(await getEntryById({ userId: user.id, entryId: failed.id })).toMatchObject({
      status: "failed",
      failureReason: "expired",
    });
    expect(await storedResponseOf(user.id, failed.id)).toEqual(stored);
    const replay = await createTopup({ userId: user.id, refId, amountMinor: AMOUNT_MINOR, currency: "USD" });
    expect(replay).toEqual({ kind: "response", replayed: true, response: stored });

    // The statement lists it (a credit named by its charge id), and the audit holds (7.1, 7.2).
    const statement = await listEntries(user.id);
    if (!statement.ok) throw new Error("statement refused");
    expect(statement.items.filter((e) => e.type === "adjustment")).toEqual([
      expect.objectContaining({ refId: data.chargeId, amount: AMOUNT_MINOR, status: "succeeded" }),
    ]);
    const audit = await runAudit({ userIds: [user.id], bankUrl: bank.url, bankTimeoutMs: BANK_TIMEOUT_MS });
    expect(audit.checks.filter((check) => !check.ok)).toEqual([]);

    // Later deliveries and passes find it done.
    expect(await deliverSuccess(`evt_adj_again_${refId}`, data)).toBe("duplicate");
    resetChargeCursors();
    expect(await reconcileOnce(passOptions(bank.url, [user.id]))).toMatchObject({ completed: 0 });
    expect(await balanceOf(user.id)).toBe(AMOUNT_MINOR);
  });

  it("before any adjustment the audit reports the charge as taken and not credited (7.2)", async () => {
    const { user, data } = await failedTopupWithSucceededCharge();
    const audit = await runAudit({ userIds: [user.id], bankUrl: bank.url, bankTimeoutMs: BANK_TIMEOUT_MS });
    const violations = audit.checks.flatMap((check) => check.violations);
    expect(violations).toEqual([expect.stringContaining(`charge ${data.chargeId}`)]);
    expect(violations[0]).toContain("no adjustment credits it");
  });

  it("a signed success the bank does not confirm credits nothing (an adjustment moves money on the bank's word only)", async () => {
    const { user, refId, data } = await failedTopupWithSucceededCharge("declined");
    expect(await deliverSuccess(`evt_unconfirmed_${refId}`, data)).toBe("anomaly_success_for_failed_row");
    const recorded = await testPool().query("SELECT detail FROM bank_webhook_events WHERE event_id = $1", [
      `evt_unconfirmed_${refId}`,
    ]);
    expect(recorded.rows[0]?.detail).toContain("reports the charge declined");
    expect(await adjustmentRows(user.id)).toBe(0);
    expect(await balanceOf(user.id)).toBe(0);
  });
});
