/**
 * The one settlement function (lib/topups/settle-topup.ts): every kind of evidence against
 * every state of a top-up row, on a real PostgreSQL. The request, the webhook and the reconciler all call it, so
 * what holds here holds for each of them; tests/http and tests/integration/reconciler*.test.ts exercise the doors.
 */
import { describe, expect, it } from "vitest";
import type { BankCharge } from "@/lib/bank/client";
import { completeEntry, failEntry, getEntryById, markProcessing, storeResponse } from "@/lib/ledger/transitions";
import type { LedgerEntry } from "@/lib/ledger/entry";
import { creditAdjustment } from "@/lib/topups/credit-adjustment";
import { settleTopup, type ChargeEvidence, type SettleDoor } from "@/lib/topups/settle-topup";
import { topupResponse, topupResponseOnWrite } from "@/lib/topups/topup-response";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf, claimEntry, claimRequest, freshRefId, seedBalance } from "../helpers/ledger";

const WEBHOOK: SettleDoor = { actor: "webhook", guard: { kind: "status_only" }, detail: "test: webhook" };

function bankSays(
  entry: LedgerEntry,
  status: BankCharge["status"],
  overrides: Partial<BankCharge> = {},
): ChargeEvidence {
  return {
    source: "bank",
    charge: {
      id: `ch_${entry.refId}`,
      status,
      merchantRef: `topup:${entry.userId}:${entry.refId}`,
      amount: entry.amountMinor,
      currency: entry.currency,
      createdAt: new Date().toISOString(),
      ...overrides,
    },
  };
}

/** A top-up row in `state`, built with the ledger's own functions. */
async function topupRow(state: "processing" | "succeeded" | "failed", amountMinor = 1200): Promise<LedgerEntry> {
  const user = await createTestUser();
  const claim = await claimEntry(claimRequest(user.id, { refId: freshRefId("settle"), amountMinor }));
  const ref = { userId: user.id, entryId: claim.id };
  await markProcessing(ref, claim.fencingToken);
  const guard = { kind: "status_only" } as const;
  if (state === "succeeded") await completeEntry(ref, { actor: "webhook", guard, credit: true });
  if (state === "failed") await failEntry(ref, { actor: "webhook", guard, reason: "declined_by_bank" });
  return (await getEntryById(ref))!;
}

describe("settleTopup: an unfinished row", () => {
  it("the bank's `succeeded` credits it once; a second settlement with the same word changes nothing", async () => {
    const row = await topupRow("processing");
    const first = await settleTopup(row, bankSays(row, "succeeded"), WEBHOOK);
    expect(first).toMatchObject({ kind: "credited", entry: { status: "succeeded", bankChargeId: `ch_${row.refId}` } });
    expect(await settleTopup(row, bankSays(row, "succeeded"), WEBHOOK)).toMatchObject({
      kind: "unchanged",
      why: "already_succeeded",
    });
    expect(await balanceOf(row.userId)).toBe(1200);
  });

  it("a signed charge.succeeded credits it like the bank's answer", async () => {
    const row = await topupRow("processing");
    const evidence: ChargeEvidence = {
      source: "signed_success",
      chargeId: "ch_signed",
      amountMinor: 1200,
      currency: "USD",
    };
    expect(await settleTopup(row, evidence, WEBHOOK)).toMatchObject({ kind: "credited" });
    expect(await balanceOf(row.userId)).toBe(1200);
  });

  it("`declined` fails it (declined_by_bank); a cancelled key fails it (expired); neither moves money", async () => {
    const declined = await topupRow("processing");
    expect(await settleTopup(declined, bankSays(declined, "declined"), WEBHOOK)).toMatchObject({
      kind: "failed",
      entry: { status: "failed", failureReason: "declined_by_bank" },
    });
    const cancelled = await topupRow("processing");
    expect(await settleTopup(cancelled, { source: "key_cancelled" }, WEBHOOK)).toMatchObject({
      kind: "failed",
      entry: { status: "failed", failureReason: "expired", bankChargeId: null },
    });
    expect(await balanceOf(declined.userId)).toBe(0);
    expect(await balanceOf(cancelled.userId)).toBe(0);
  });

  it("`pending` leaves it unfinished with the charge id recorded", async () => {
    const row = await topupRow("processing");
    expect(await settleTopup(row, bankSays(row, "pending"), WEBHOOK)).toMatchObject({
      kind: "pending",
      entry: { status: "processing", bankChargeId: `ch_${row.refId}` },
    });
  });

  it("`pending` for the request stores its first response with the charge id, byte for byte the row's own render", async () => {
    const row = await topupRow("processing");
    const request: SettleDoor = {
      actor: "request",
      guard: { kind: "lease", fencingToken: row.fencingToken },
      detail: "test: request",
      pendingResponse: topupResponseOnWrite,
    };
    const settled = await settleTopup(row, bankSays(row, "pending"), request);
    const stored = await getEntryById({ userId: row.userId, entryId: row.id });
    expect(settled).toMatchObject({ kind: "pending", entry: { bankChargeId: `ch_${row.refId}` } });
    expect(stored?.response).toEqual(topupResponse(stored!));
    expect(settled.kind === "pending" && settled.responded).toEqual(stored?.response);
    // A second settlement of the same row finds the charge id recorded: nothing stored again.
    const again = await settleTopup(stored!, bankSays(row, "pending"), request);
    expect(again).toEqual({ kind: "pending", entry: stored });
  });

  it("`pending` for the request with a response already stored records the charge id alone (the earlier response stays)", async () => {
    const row = await topupRow("processing");
    const ref = { userId: row.userId, entryId: row.id };
    await storeResponse(ref, { status: 201, body: '{"earlier":true}' });
    const settled = await settleTopup(row, bankSays(row, "pending"), {
      actor: "request",
      guard: { kind: "lease", fencingToken: row.fencingToken },
      detail: "test: request",
      pendingResponse: topupResponseOnWrite,
    });
    expect(settled).toMatchObject({ kind: "pending", entry: { bankChargeId: `ch_${row.refId}` } });
    expect(settled.kind === "pending" && settled.responded).toBeUndefined();
    expect((await getEntryById(ref))?.response).toEqual({ status: 201, body: '{"earlier":true}' });
  });

  it("a charge of another amount, currency or id is an anomaly naming merchant reference and charge id; nothing moves", async () => {
    const row = await topupRow("processing");
    const merchantRef = `topup:${row.userId}:${row.refId}`;
    const cases: Array<[Partial<BankCharge>, string]> = [
      [{ amount: 1199 }, "amount_mismatch"],
      [{ currency: "EUR" }, "currency_mismatch"],
    ];
    for (const [overrides, kind] of cases) {
      expect(await settleTopup(row, bankSays(row, "succeeded", overrides), WEBHOOK)).toMatchObject({
        kind: "anomaly",
        anomaly: { kind, merchantRef, chargeId: `ch_${row.refId}` },
      });
    }
    const attached = (await settleTopup(row, bankSays(row, "pending"), WEBHOOK)).entry;
    expect(await settleTopup(attached, bankSays(row, "succeeded", { id: "ch_other" }), WEBHOOK)).toMatchObject({
      kind: "anomaly",
      anomaly: { kind: "charge_mismatch", merchantRef, chargeId: "ch_other" },
    });
    expect((await getEntryById({ userId: row.userId, entryId: row.id }))?.status).toBe("processing");
    expect(await balanceOf(row.userId)).toBe(0);
  });

  it("a lease holder fenced out by a take-over changes nothing (the new owner settles)", async () => {
    const row = await topupRow("processing");
    await testPool().query("UPDATE ledger_entries SET attempt = attempt + 1 WHERE user_id = $1 AND id = $2", [
      row.userId,
      row.id,
    ]);
    const request: SettleDoor = {
      actor: "request",
      guard: { kind: "lease", fencingToken: row.fencingToken },
      detail: "test",
    };
    expect(await settleTopup(row, bankSays(row, "succeeded"), request)).toMatchObject({
      kind: "unchanged",
      why: "fenced",
      entry: { status: "processing" },
    });
    expect(await balanceOf(row.userId)).toBe(0);
  });

  it("a row another door finished meanwhile is judged as it now is (a stale read never moves it twice)", async () => {
    const row = await topupRow("processing");
    await settleTopup(row, bankSays(row, "declined"), WEBHOOK);
    // `row` is the stale read (still processing); the bank now reports succeeded for the row that failed: judged
    // as it is now (failed), the charge is credited through its adjustment, and the row itself does not move.
    expect(await settleTopup(row, bankSays(row, "succeeded"), WEBHOOK)).toMatchObject({
      kind: "adjusted",
      entry: { status: "failed" },
      adjustment: { type: "adjustment", refId: `ch_${row.refId}`, status: "succeeded", adjustsEntryId: row.id },
    });
    expect(await getEntryById({ userId: row.userId, entryId: row.id })).toMatchObject({ status: "failed" });
    expect(await balanceOf(row.userId)).toBe(1200);
  });
});

describe("settleTopup: a terminal row never moves", () => {
  it("succeeded: a failure the bank confirms is an anomaly; a cancelled key too; pending changes nothing", async () => {
    const row = await topupRow("succeeded");
    expect(await settleTopup(row, bankSays(row, "declined"), WEBHOOK)).toMatchObject({
      kind: "anomaly",
      anomaly: { kind: "decline_for_succeeded_row" },
    });
    expect(await settleTopup(row, { source: "key_cancelled" }, WEBHOOK)).toMatchObject({
      kind: "anomaly",
      anomaly: { kind: "no_charge_for_succeeded_row" },
    });
    expect(await settleTopup(row, bankSays(row, "pending"), WEBHOOK)).toMatchObject({ kind: "unchanged" });
    expect(await balanceOf(row.userId)).toBe(1200);
  });

  it("failed: a decline or a cancelled key is already so; a signed success alone credits nothing", async () => {
    const row = await topupRow("failed");
    expect(await settleTopup(row, bankSays(row, "declined"), WEBHOOK)).toMatchObject({
      kind: "unchanged",
      why: "already_failed",
    });
    expect(await settleTopup(row, { source: "key_cancelled" }, WEBHOOK)).toMatchObject({ kind: "unchanged" });
    const signed: ChargeEvidence = { source: "signed_success", chargeId: "ch_x", amountMinor: 1200, currency: "USD" };
    expect(await settleTopup(row, signed, WEBHOOK)).toMatchObject({
      kind: "anomaly",
      anomaly: { kind: "success_for_failed_row", chargeId: "ch_x" },
    });
    expect(await balanceOf(row.userId)).toBe(0);
  });

  it("failed: the bank's `succeeded` credits the charge once through the row's adjustment; the row stays failed", async () => {
    const row = await topupRow("failed");
    const first = await settleTopup(row, bankSays(row, "succeeded"), WEBHOOK);
    expect(first).toMatchObject({ kind: "adjusted", entry: { id: row.id, status: "failed" } });
    if (first.kind !== "adjusted") throw new Error("expected an adjustment");
    expect(first.adjustment).toMatchObject({
      userId: row.userId,
      type: "adjustment",
      refId: `ch_${row.refId}`,
      amountMinor: 1200,
      status: "succeeded",
      adjustsEntryId: row.id,
      params: { amount: 1200, currency: "USD", chargeId: `ch_${row.refId}` },
    });
    expect(await settleTopup(row, bankSays(row, "succeeded"), WEBHOOK)).toMatchObject({
      kind: "unchanged",
      why: "already_adjusted",
    });
    // Another charge for the same top-up cannot be credited a second time.
    expect(await settleTopup(row, bankSays(row, "succeeded", { id: "ch_other" }), WEBHOOK)).toMatchObject({
      kind: "anomaly",
      anomaly: { kind: "adjustment_mismatch", chargeId: "ch_other" },
    });
    expect(await balanceOf(row.userId)).toBe(1200);
    expect(await getEntryById({ userId: row.userId, entryId: row.id })).toMatchObject({ status: "failed" });
    // The same charge's adjustment asked with another amount: the existing entry differs, nothing is credited.
    const door = { actor: "webhook", detail: "test: other amount" } as const;
    const chargeId = `ch_${row.refId}`;
    expect(await creditAdjustment(row, { chargeId, amountMinor: 1100, currency: "USD" }, door)).toEqual({
      kind: "mismatch",
      adjustment: first.adjustment,
    });
    expect(await creditAdjustment(row, { chargeId, amountMinor: 1200, currency: "USD" }, door)).toEqual({
      kind: "already_credited",
      adjustment: first.adjustment,
    });
    expect(await balanceOf(row.userId)).toBe(1200);
  });
});

describe("settleTopup: a settlement that keeps failing", () => {
  it("counts each failed attempt on the row with its last error, and flags it after SETTLE_ATTEMPTS_MAX (5)", async () => {
    const row = await topupRow("processing", 1000);
    // The credit cannot land: the wallet is 500 below 2^53 and the CHECK refuses any balance at or above it.
    await seedBalance(row.userId, 2 ** 53 - 500);
    for (let attempt = 1; attempt <= 5; attempt++) {
      await expect(settleTopup(row, bankSays(row, "succeeded"), WEBHOOK)).rejects.toThrow();
      const now = (await getEntryById({ userId: row.userId, entryId: row.id }))!;
      expect(now).toMatchObject({
        status: "processing",
        settleFailures: attempt,
        settleLastError: "check violation on wallets_balance_range",
      });
      expect(now.settleFlaggedAt === null).toBe(attempt < 5);
    }
    const flaggedAt = (await getEntryById({ userId: row.userId, entryId: row.id }))!.settleFlaggedAt;
    await expect(settleTopup(row, bankSays(row, "succeeded"), WEBHOOK)).rejects.toThrow();
    // The first flag time is kept.
    expect((await getEntryById({ userId: row.userId, entryId: row.id }))!.settleFlaggedAt).toEqual(flaggedAt);
  });
});
