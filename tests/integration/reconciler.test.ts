/**
 * The reconciler, ledger → bank (contract sections 2, 5 and 7.5; case C12): rows whose lease expired are
 * taken over and settled from what a real sandbox bank says. Real PostgreSQL, real bank processes on free ports
 * with their own state files; each test reconciles only its own users (the database is shared with other files).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCharge } from "@/lib/bank/client";
import { createTopup } from "@/lib/topups/create-topup";
import { insertClaim } from "@/lib/ledger/claim";
import { getEntryById } from "@/lib/ledger/transitions";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { freePort } from "@/scripts/lib/ports";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf, claimRequest, freshRefId } from "../helpers/ledger";
import {
  auditTrail,
  BANK_TIMEOUT_MS,
  bankChargeOf,
  passOptions,
  startLaggingLookupProxy,
  startTestBank,
  storedResponseOf,
  stuckTopup,
  type TestBank,
} from "./reconciler-fixtures";

let syncBank: TestBank;
let pendingBank: TestBank;

beforeAll(async () => {
  // One bank that answers `succeeded` at once, one whose charges stay pending for an hour.
  [syncBank, pendingBank] = await Promise.all([
    startTestBank(),
    startTestBank({ syncSuccess: false, settleDelayMs: 3_600_000 }),
  ]);
});

afterAll(async () => {
  await Promise.all([syncBank?.stop(), pendingBank?.stop()]);
});

/** The re-drive window used by these tests: the contract's default, 600 s (env REDRIVE_WINDOW_S). */
const REDRIVE_WINDOW_S = 600;

describe("reconciler: ledger → bank", () => {
  it("takes over a row whose lease expired and completes it from the bank's succeeded charge, once; C12: the request's retry replays", async () => {
    const user = await createTestUser();
    const stuck = await stuckTopup(user.id, { amountMinor: 2500, chargeAt: syncBank.url });
    expect(stuck.entry).toMatchObject({ status: "processing", fencingToken: 1, leaseOwner: "dead-worker" });

    const result = await reconcileOnce(passOptions(syncBank.url, [user.id], { redriveWindowS: REDRIVE_WINDOW_S }));
    expect(result).toEqual({ examined: 1, completed: 1, failed: 0, redriven: 0, skipped: 0 });
    const charge = await bankChargeOf(syncBank.url, stuck.merchantRef);
    const row = await getEntryById(stuck.ref);
    expect(row).toMatchObject({
      status: "succeeded",
      fencingToken: 2,
      bankChargeId: charge!.id,
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    expect(await balanceOf(user.id)).toBe(2500);
    expect(await auditTrail(user.id, stuck.entry.id)).toEqual([
      { from: null, to: "initiated", actor: "request", fencingToken: 1, detail: null },
      { from: "initiated", to: "processing", actor: "request", fencingToken: 1, detail: null },
      {
        from: "processing",
        to: "processing",
        actor: "reconciler",
        fencingToken: 2,
        detail: "lease taken over from dead-worker",
      },
      {
        from: "processing",
        to: "succeeded",
        actor: "reconciler",
        fencingToken: 2,
        detail: expect.stringContaining("reconciler"),
      },
    ]);

    // The response the dead request never stored is stored now, and a retry of that request replays it.
    const stored = await storedResponseOf(user.id, stuck.entry.id);
    expect(stored?.status).toBe(201);
    expect(JSON.parse(stored!.body)).toEqual({
      topup: {
        refId: stuck.refId,
        amount: 2500,
        currency: "USD",
        status: "succeeded",
        failureReason: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    });
    const retry = await createTopup({ userId: user.id, refId: stuck.refId, amountMinor: 2500, currency: "USD" });
    expect(retry).toEqual({ kind: "response", response: stored, replayed: true });

    // A second pass finds nothing to do and credits nothing more.
    expect(await reconcileOnce(passOptions(syncBank.url, [user.id]))).toEqual({
      examined: 0,
      completed: 0,
      failed: 0,
      redriven: 0,
      skipped: 0,
    });
    expect(await balanceOf(user.id)).toBe(2500);
  });

  it("fails a row whose charge the bank declined, with no credit", async () => {
    const user = await createTestUser();
    const stuck = await stuckTopup(user.id, { refId: freshRefId("sbx-decline-"), chargeAt: syncBank.url });
    const result = await reconcileOnce(passOptions(syncBank.url, [user.id]));
    expect(result).toMatchObject({ examined: 1, completed: 0, failed: 1 });
    expect(await getEntryById(stuck.ref)).toMatchObject({ status: "failed", failureReason: "declined_by_bank" });
    expect(await balanceOf(user.id)).toBe(0);
    expect(JSON.parse((await storedResponseOf(user.id, stuck.entry.id))!.body).topup).toMatchObject({
      status: "failed",
      failureReason: "declined_by_bank",
    });
  });

  it("leaves a row alone while its charge is pending at the bank: no status change, no lease extension beyond the take-over, skipped", async () => {
    const user = await createTestUser();
    const stuck = await stuckTopup(user.id, { chargeAt: pendingBank.url });
    const charge = await bankChargeOf(pendingBank.url, stuck.merchantRef);
    expect(charge?.status).toBe("pending");

    const result = await reconcileOnce(passOptions(pendingBank.url, [user.id]));
    expect(result).toEqual({ examined: 1, completed: 0, failed: 0, redriven: 0, skipped: 1 });
    const row = await getEntryById(stuck.ref);
    expect(row).toMatchObject({ status: "processing", fencingToken: 2, bankChargeId: charge!.id, response: null });
    expect(await balanceOf(user.id)).toBe(0);
    // Its lease is the take-over's, live now: the next pass does not take it again.
    expect(await reconcileOnce(passOptions(pendingBank.url, [user.id]))).toMatchObject({ examined: 0 });
    expect((await getEntryById(stuck.ref))?.fencingToken).toBe(2);
  });

  it("C12: re-drives a row that never reached the bank while it is younger than the re-drive window: one charge, one credit, the retry replays", async () => {
    const user = await createTestUser();
    // The request claimed and died before calling the bank (still `initiated`).
    const stuck = await stuckTopup(user.id, { amountMinor: 700, processing: false, chargeAt: null, ageS: 60 });
    expect(await bankChargeOf(syncBank.url, stuck.merchantRef)).toBeNull();

    const result = await reconcileOnce(passOptions(syncBank.url, [user.id], { redriveWindowS: REDRIVE_WINDOW_S }));
    expect(result).toEqual({ examined: 1, completed: 1, failed: 0, redriven: 1, skipped: 0 });
    const charge = await bankChargeOf(syncBank.url, stuck.merchantRef);
    expect(charge).toMatchObject({ amount: 700, currency: "USD", status: "succeeded" });
    expect(await getEntryById(stuck.ref)).toMatchObject({ status: "succeeded", bankChargeId: charge!.id });
    expect(await balanceOf(user.id)).toBe(700);

    // The retry with the same key never runs the charge twice: it replays the stored response.
    const retry = await createTopup({ userId: user.id, refId: stuck.refId, amountMinor: 700, currency: "USD" });
    expect(retry).toMatchObject({ kind: "response", replayed: true, response: { status: 201 } });
    // Sending the same key to the bank again gives back the same charge, not a new one.
    const again = await createCharge(
      { merchantRef: stuck.merchantRef, amountMinor: 700, currency: "USD" },
      { bankUrl: syncBank.url, timeoutMs: BANK_TIMEOUT_MS },
    );
    expect(again).toMatchObject({ kind: "charge", replayed: true, charge: { id: charge!.id } });
  });

  it("past the re-drive window: cancels the key at the bank, then fails the row as expired; the key can never be charged afterwards", async () => {
    const user = await createTestUser();
    const stuck = await stuckTopup(user.id, { processing: true, chargeAt: null, ageS: REDRIVE_WINDOW_S + 60 });
    const result = await reconcileOnce(passOptions(syncBank.url, [user.id], { redriveWindowS: REDRIVE_WINDOW_S }));
    expect(result).toEqual({ examined: 1, completed: 0, failed: 1, redriven: 0, skipped: 0 });
    expect(await getEntryById(stuck.ref)).toMatchObject({
      status: "failed",
      failureReason: "expired",
      bankChargeId: null,
    });
    expect(await balanceOf(user.id)).toBe(0);
    expect(JSON.parse((await storedResponseOf(user.id, stuck.entry.id))!.body).topup).toMatchObject({
      status: "failed",
      failureReason: "expired",
    });
    // A request for that key still in flight somewhere cannot charge any more.
    const late = await createCharge(
      { merchantRef: stuck.merchantRef, amountMinor: 1000, currency: "USD" },
      { bankUrl: syncBank.url, timeoutMs: BANK_TIMEOUT_MS },
    );
    expect(late).toMatchObject({ kind: "rejected", status: 409, code: "idempotency_key_cancelled" });
    expect(await bankChargeOf(syncBank.url, stuck.merchantRef)).toBeNull();
  });

  it("past the re-drive window, when the cancel reports that a charge exists after all: settles from that charge, never fails it as expired", async () => {
    const user = await createTestUser();
    // The charge exists, but the bank's lookup (behind the proxy) says 404: only the cancel reveals it.
    const stuck = await stuckTopup(user.id, { amountMinor: 1200, chargeAt: syncBank.url, ageS: REDRIVE_WINDOW_S + 60 });
    const lagging = await startLaggingLookupProxy(syncBank.url);
    try {
      const result = await reconcileOnce(passOptions(lagging.url, [user.id], { redriveWindowS: REDRIVE_WINDOW_S }));
      expect(result).toMatchObject({ examined: 1, completed: 1, failed: 0 });
    } finally {
      await lagging.stop();
    }
    expect(await getEntryById(stuck.ref)).toMatchObject({ status: "succeeded" });
    expect(await balanceOf(user.id)).toBe(1200);
  });

  it("a row whose key an earlier pass cancelled (and then died) is failed as expired when the re-drive is refused with 409", async () => {
    const user = await createTestUser();
    const stuck = await stuckTopup(user.id, { chargeAt: null, ageS: 30 });
    const { cancelCharge } = await import("@/lib/bank/client");
    expect(await cancelCharge(stuck.merchantRef, { bankUrl: syncBank.url, timeoutMs: BANK_TIMEOUT_MS })).toEqual({
      kind: "cancelled",
    });
    const result = await reconcileOnce(passOptions(syncBank.url, [user.id], { redriveWindowS: REDRIVE_WINDOW_S }));
    expect(result).toMatchObject({ examined: 1, failed: 1, completed: 0 });
    expect(await getEntryById(stuck.ref)).toMatchObject({ status: "failed", failureReason: "expired" });
  });

  it("bank unreachable: the row is left unfinished (never failed or guessed) and reported; a later pass with the bank back settles it", async () => {
    const user = await createTestUser();
    const stuck = await stuckTopup(user.id, { amountMinor: 300, chargeAt: syncBank.url });
    const second = await stuckTopup(user.id, { amountMinor: 400, chargeAt: syncBank.url });
    const closed = `http://127.0.0.1:${await freePort()}`;

    const result = await reconcileOnce(passOptions(closed, [user.id], { redriveWindowS: REDRIVE_WINDOW_S }));
    expect(result).toMatchObject({ examined: 1, completed: 0, failed: 0, redriven: 0, skipped: 1 });
    expect(result.bankUnreachable).toMatchObject({
      rowsLeft: 2,
      chargesUnlisted: true,
      reason: expect.stringContaining("network"),
    });
    for (const ref of [stuck.ref, second.ref]) expect((await getEntryById(ref))?.status).toBe("processing");
    expect(await balanceOf(user.id)).toBe(0);

    // The bank is back; the row it could not ask about is settled once its (take-over) lease expires.
    await testPool().query(
      "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 second' WHERE user_id = $1",
      [user.id],
    );
    expect(await reconcileOnce(passOptions(syncBank.url, [user.id]))).toMatchObject({ examined: 2, completed: 2 });
    expect(await balanceOf(user.id)).toBe(700);
  });

  it("two reconcilers at once handle each row exactly once: one take-over, one completion, one credit per row", async () => {
    const user = await createTestUser();
    const rows = await Promise.all(
      Array.from({ length: 8 }, (_, i) => stuckTopup(user.id, { amountMinor: 100 + i, chargeAt: syncBank.url })),
    );
    const [a, b] = await Promise.all([
      reconcileOnce(passOptions(syncBank.url, [user.id], { workerId: "reconciler-a" })),
      reconcileOnce(passOptions(syncBank.url, [user.id], { workerId: "reconciler-b" })),
    ]);
    // A row one reconciler took over may be completed by the other one's bank-to-ledger direction (status-only, like a
    // webhook); either way it is completed once, so examined may count a row twice but completed never does.
    expect(a.examined + b.examined).toBeGreaterThanOrEqual(8);
    expect(a.completed + b.completed).toBe(8);
    expect(await balanceOf(user.id)).toBe(rows.reduce((sum, r) => sum + r.entry.amountMinor, 0));
    for (const row of rows) {
      const trail = await auditTrail(user.id, row.entry.id);
      expect(trail.filter((t) => t.detail?.startsWith("lease taken over"))).toHaveLength(1);
      expect(trail.filter((t) => t.to === "succeeded")).toHaveLength(1);
      expect((await getEntryById(row.ref))?.fencingToken).toBe(2);
    }
  });

  it("a take-over fences the dead worker: its late completion with the old attempt changes nothing", async () => {
    const user = await createTestUser();
    const stuck = await stuckTopup(user.id, { chargeAt: pendingBank.url });
    await reconcileOnce(passOptions(pendingBank.url, [user.id]));
    const { completeEntry } = await import("@/lib/ledger/transitions");
    const late = await completeEntry(stuck.ref, {
      actor: "request",
      guard: { kind: "lease", fencingToken: 1 },
      credit: true,
    });
    expect(late.kind).toBe("not_moved");
    expect(await balanceOf(user.id)).toBe(0);
  });

  it("an unfinished reward or payment row (never expected) is reported as an anomaly and left alone; the pass does not crash", async () => {
    const user = await createTestUser();
    const claimed = await insertClaim(
      testPool(),
      claimRequest(user.id, { type: "payment", refId: freshRefId("order"), leaseMs: 0 }),
    );
    await testPool().query(
      "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 second' WHERE user_id = $1",
      [user.id],
    );
    const result = await reconcileOnce(passOptions(syncBank.url, [user.id]));
    expect(result).toMatchObject({
      examined: 1,
      completed: 0,
      failed: 0,
      skipped: 1,
      anomalies: [{ kind: "unfinished_non_topup" }],
    });
    expect((await getEntryById({ userId: user.id, entryId: claimed!.id }))?.status).toBe("initiated");
  });
});
