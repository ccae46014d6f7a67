/**
 * The reconciler, bank → ledger (contract sections 5 and 7.2): every succeeded charge must end with its
 * succeeded top-up. Real PostgreSQL and real sandbox banks; each test reconciles only its own users.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createCharge } from "@/lib/bank/client";
import { merchantRefFor } from "@/lib/bank/merchant-ref";
import { findEntryByKey } from "@/lib/ledger/claim";
import { failEntry } from "@/lib/ledger/transitions";
import { createTopup } from "@/lib/topups/create-topup";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { resetChargeCursors } from "@/lib/reconciler/charge-cursor";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf, claimEntry, claimRequest, countRows, freshRefId } from "../helpers/ledger";
import {
  auditTrail,
  BANK_TIMEOUT_MS,
  passOptions,
  startTestBank,
  storedResponseOf,
  waitForChargeStatus,
  type TestBank,
} from "./reconciler-fixtures";

let syncBank: TestBank;
/** Charges answer `pending` and settle 300 ms later: long enough for a pass to see them pending. */
let slowBank: TestBank;
const SLOW_SETTLE_MS = 300;

beforeAll(async () => {
  [syncBank, slowBank] = await Promise.all([
    startTestBank(),
    startTestBank({ syncSuccess: false, settleDelayMs: SLOW_SETTLE_MS }),
  ]);
});

afterAll(async () => {
  await Promise.all([syncBank?.stop(), slowBank?.stop()]);
});

beforeEach(() => {
  // Each test starts like a fresh process: the cursor looks back 24 h.
  resetChargeCursors();
});

async function charge(bankUrl: string, userId: string, refId: string, amountMinor: number, currency = "USD") {
  const result = await createCharge(
    { merchantRef: merchantRefFor(userId, refId), amountMinor, currency },
    { bankUrl, timeoutMs: BANK_TIMEOUT_MS },
  );
  if (result.kind !== "charge") throw new Error(`no charge: ${JSON.stringify(result)}`);
  return result.charge;
}

describe("reconciler: bank → ledger", () => {
  it("claims the missing row of a succeeded charge under the same key, credits it once and stores its response; later passes change nothing", async () => {
    const user = await createTestUser();
    const refId = freshRefId("lost-row");
    const made = await charge(syncBank.url, user.id, refId, 4200);

    const result = await reconcileOnce(passOptions(syncBank.url, [user.id]));
    expect(result).toEqual({ examined: 1, completed: 1, failed: 0, redriven: 0, skipped: 0 });
    const entry = await findEntryByKey({ userId: user.id, type: "topup", refId });
    expect(entry).toMatchObject({ status: "succeeded", amountMinor: 4200, currency: "USD", bankChargeId: made.id });
    expect(await balanceOf(user.id)).toBe(4200);
    expect(await auditTrail(user.id, entry!.id)).toEqual([
      { from: null, to: "initiated", actor: "reconciler", fencingToken: 1, detail: null },
      {
        from: "initiated",
        to: "succeeded",
        actor: "reconciler",
        fencingToken: 1,
        detail: expect.stringContaining("claimed from a succeeded bank charge"),
      },
    ]);
    const stored = await storedResponseOf(user.id, entry!.id);
    expect(stored?.status).toBe(201);
    // The user's own retry (same amount) replays that response instead of charging again.
    expect(await createTopup({ userId: user.id, refId, amountMinor: 4200, currency: "USD" })).toEqual({
      kind: "response",
      response: stored,
      replayed: true,
    });

    for (let pass = 0; pass < 2; pass++) {
      resetChargeCursors();
      expect(await reconcileOnce(passOptions(syncBank.url, [user.id]))).toEqual({
        examined: 0,
        completed: 0,
        failed: 0,
        redriven: 0,
        skipped: 0,
      });
    }
    expect(await countRows(user.id, "topup", refId)).toBe(1);
    expect(await balanceOf(user.id)).toBe(4200);
  });

  it("completes an unfinished row whose charge succeeded (status-only, like the webhook) and leaves the response to its live request", async () => {
    const user = await createTestUser();
    const refId = freshRefId("live");
    const claim = await claimEntry(claimRequest(user.id, { refId, amountMinor: 900 }));
    await charge(syncBank.url, user.id, refId, 900);

    const result = await reconcileOnce(passOptions(syncBank.url, [user.id]));
    expect(result).toMatchObject({ examined: 1, completed: 1 });
    expect(await balanceOf(user.id)).toBe(900);
    // The request still holds its lease: it stores its own first response (contract section 3).
    expect(await storedResponseOf(user.id, claim.id)).toBeNull();
  });

  it("a charge still pending holds the cursor: the next pass sees it again and completes it once it has succeeded", async () => {
    const user = await createTestUser();
    const refId = freshRefId("pending-then-ok");
    const made = await charge(slowBank.url, user.id, refId, 150);
    expect(made.status).toBe("pending");
    // A later charge that is already final (declined at once): without the hold, the cursor would move to it and
    // the next pass would never list the pending charge again. 5 ms apart so the two creation times differ.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const later = await charge(slowBank.url, user.id, freshRefId("sbx-decline-later"), 1);
    expect(later.status).toBe("declined");
    expect(Date.parse(later.createdAt)).toBeGreaterThan(Date.parse(made.createdAt));
    const first = await reconcileOnce(passOptions(slowBank.url, [user.id]));
    expect(first).toMatchObject({ completed: 0 });
    expect(await countRows(user.id, "topup", refId)).toBe(0);

    await waitForChargeStatus(slowBank.url, made.merchantRef, "succeeded");
    // No reset of the cursor here: this pass resumes where the first one left it.
    const second = await reconcileOnce(passOptions(slowBank.url, [user.id]));
    expect(second).toMatchObject({ examined: 1, completed: 1 });
    expect(await balanceOf(user.id)).toBe(150);
  });

  it("a succeeded charge for a row that already failed is credited once by an adjustment; the row stays failed", async () => {
    const user = await createTestUser();
    const refId = freshRefId("failed-row");
    const claim = await claimEntry(claimRequest(user.id, { refId, amountMinor: 500 }));
    await failEntry(
      { userId: user.id, entryId: claim.id },
      { actor: "request", guard: { kind: "status_only" }, reason: "declined_by_bank" },
    );
    const made = await charge(syncBank.url, user.id, refId, 500);

    const result = await reconcileOnce(passOptions(syncBank.url, [user.id]));
    expect(result).toMatchObject({ completed: 1, failed: 0 });
    expect(result.anomalies).toBeUndefined();
    expect(await balanceOf(user.id)).toBe(500);
    const topup = await findEntryByKey({ userId: user.id, type: "topup", refId });
    expect(topup?.status).toBe("failed");
    expect(await findEntryByKey({ userId: user.id, type: "adjustment", refId: made.id })).toMatchObject({
      status: "succeeded",
      amountMinor: 500,
      adjustsEntryId: topup?.id,
    });
    // A second pass finds it credited already.
    resetChargeCursors();
    expect(await reconcileOnce(passOptions(syncBank.url, [user.id]))).toMatchObject({ completed: 0 });
    expect(await balanceOf(user.id)).toBe(500);
  });

  it("amount or currency mismatches are anomalies and credit nothing", async () => {
    const user = await createTestUser();
    const refId = freshRefId("amount");
    await claimEntry(claimRequest(user.id, { refId, amountMinor: 1000 }));
    await charge(syncBank.url, user.id, refId, 999);
    const euroRef = freshRefId("euro");
    await charge(syncBank.url, user.id, euroRef, 1000, "EUR");

    const result = await reconcileOnce(passOptions(syncBank.url, [user.id]));
    expect(result.completed).toBe(0);
    expect(result.anomalies?.map((a) => a.kind).sort()).toEqual(["amount_mismatch", "currency_mismatch"]);
    expect(await balanceOf(user.id)).toBe(0);
    expect((await findEntryByKey({ userId: user.id, type: "topup", refId }))?.status).toBe("initiated");
    // The EUR charge gets no row: claiming it in a USD wallet would credit the wrong money.
    expect(await countRows(user.id, "topup", euroRef)).toBe(0);
  });

  it("C19: a reconciler error in the bank-to-ledger direction names the merchant reference and the charge id", async () => {
    const user = await createTestUser();
    const refId = freshRefId("row-error");
    // The row is claimed and in flight (live lease): only the bank-to-ledger direction looks at it.
    await claimEntry(claimRequest(user.id, { refId, amountMinor: 700 }));
    const made = await charge(syncBank.url, user.id, refId, 700);
    // Another row of the user already records that charge id, so completing this row with it breaks the unique
    // index (user_id, bank_charge_id): a constraint violation on this row, which the pass reports and survives.
    const other = await claimEntry(claimRequest(user.id, { refId: freshRefId("holder"), amountMinor: 1 }));
    await testPool().query("UPDATE ledger_entries SET bank_charge_id = $3 WHERE user_id = $1 AND id = $2", [
      user.id,
      other.id,
      made.id,
    ]);

    const result = await reconcileOnce(passOptions(syncBank.url, [user.id]));
    expect(result.anomalies).toEqual([
      {
        kind: "row_error",
        merchantRef: merchantRefFor(user.id, refId),
        chargeId: made.id,
        detail: expect.stringContaining("ledger_entries_user_id_bank_charge_id_key"),
      },
    ]);
    expect(await balanceOf(user.id)).toBe(0);
  });
});
