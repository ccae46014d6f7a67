/**
 * The refund statements of lib/ledger (contract section 11, with section 12's debt): `claimRefund` reserves the
 * wallet and the top-up's refundable remainder in the claim's own statement or stores its refusal, `releaseReservation`
 * gives a reservation back once (repaying an open debt first), `listRefundsOf` reads a top-up's refunds. Straight
 * against a real PostgreSQL, no bank: the rows the statements leave are read back column by column. Part of the
 * mutation test set (vitest.stryker.config.mts).
 */
import { describe, expect, it } from "vitest";
import { findEntryByKey } from "@/lib/ledger/claim";
import type { StoredResponse } from "@/lib/ledger/entry";
import { fingerprint } from "@/lib/ledger/fingerprint";
import { claimRefund, listRefundsOf, releaseReservation, type RefundClaimRequest } from "@/lib/ledger/refunds";
import { completeEntry, getEntryById, markProcessing } from "@/lib/ledger/transitions";
import { createTestUser, testPool } from "../helpers/db";
import { claimEntry, claimRequest, freshRefId, transitionsOf } from "../helpers/ledger";

const REFUSALS = {
  insufficientFunds: { status: 402, body: '{"code":"insufficient_funds"}' },
  debtOutstanding: { status: 402, body: '{"code":"debt_outstanding"}' },
  exceedsTopup: { status: 422, body: '{"code":"refund_exceeds_topup"}' },
  topupDisputed: { status: 422, body: '{"code":"topup_disputed"}' },
} satisfies Record<string, StoredResponse>;

/** A succeeded top-up of `amountMinor` credited to `userId`'s wallet through the ledger's own transitions. */
async function succeededTopup(userId: string, amountMinor: number) {
  const claimed = await claimEntry(claimRequest(userId, { amountMinor }));
  const done = await completeEntry(
    { userId, entryId: claimed.id },
    {
      actor: "request",
      guard: { kind: "lease", fencingToken: claimed.fencingToken },
      credit: true,
      bankChargeId: freshRefId("ch"),
    },
  );
  if (done.kind !== "moved") throw new Error("expected the top-up to succeed");
  return done.entry;
}

function refundRequest(
  userId: string,
  topup: { id: number; refId: string },
  amountMinor: number,
  refId = freshRefId("rf"),
): RefundClaimRequest {
  const params = { amount: amountMinor, currency: "USD", topupRefId: topup.refId };
  return {
    key: { userId, type: "refund", refId },
    topupEntryId: topup.id,
    amountMinor,
    currency: "USD",
    params,
    leaseOwner: "refund-test",
    leaseMs: 30_000,
    actor: "admin",
    refusals: REFUSALS,
  };
}

/** The wallet's balance and debt, and the top-up's refunded sum, as the database holds them (minor units). */
async function moneyOf(userId: string, topupId: number) {
  const result = await testPool().query<{ balance: number | null; debt: number | null; refunded: number }>(
    `SELECT (SELECT balance_minor::int FROM wallets WHERE user_id = $1) AS balance,
            (SELECT debt_minor::int FROM wallets WHERE user_id = $1) AS debt,
            refunded_minor::int AS refunded
       FROM ledger_entries WHERE user_id = $1 AND id = $2`,
    [userId, topupId],
  );
  return result.rows[0];
}

async function setWallet(userId: string, balanceMinor: number, debtMinor: number): Promise<void> {
  await testPool().query("UPDATE wallets SET balance_minor = $2, debt_minor = $3 WHERE user_id = $1", [
    userId,
    balanceMinor,
    debtMinor,
  ]);
}

describe("claimRefund", () => {
  it("claims and reserves in one statement: the row initiated under a lease, wallet and remainder lowered", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const request = refundRequest(user.id, topup, 300);
    const before = Date.now();
    const outcome = await claimRefund(request);
    expect(outcome).toMatchObject({ kind: "reserved", balanceMinor: 700 });
    if (outcome.kind !== "reserved") throw new Error("unreachable");
    expect(outcome.entry).toMatchObject({
      userId: user.id,
      type: "refund",
      refId: request.key.refId,
      amountMinor: 300,
      currency: "USD",
      fingerprint: fingerprint("refund", request.params),
      params: request.params,
      status: "initiated",
      failureReason: null,
      response: null,
      leaseOwner: "refund-test",
      fencingToken: 1,
      refundsEntryId: topup.id,
      refundedMinor: 0,
    });
    // The lease is the request's: LEASE_MS from the claim, in milliseconds.
    const expiresMs = outcome.entry.leaseExpiresAt!.getTime();
    expect(expiresMs).toBeGreaterThanOrEqual(before + 29_000);
    expect(expiresMs).toBeLessThanOrEqual(Date.now() + 31_000);
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 700, debt: 0, refunded: 300 });
    expect(await getEntryById({ userId: user.id, entryId: topup.id })).toMatchObject({
      refundedMinor: 300,
      refundsEntryId: null,
    });
    expect(await transitionsOf(user.id, outcome.entry.id)).toEqual([
      { from: null, to: "initiated", actor: "admin", fencingToken: 1 },
    ]);
    const detail = await testPool().query(
      "SELECT detail FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2",
      [user.id, outcome.entry.id],
    );
    expect(detail.rows[0]?.detail).toBe("claimed: refund reserved from the wallet and the top-up");
  });

  it("reserves exactly the whole remainder and exactly the whole balance (the limits are inclusive)", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    expect((await claimRefund(refundRequest(user.id, topup, 400))).kind).toBe("reserved");
    // Remainder 600 and balance 600: a refund of exactly 600 fits both.
    const exact = await claimRefund(refundRequest(user.id, topup, 600));
    expect(exact).toMatchObject({ kind: "reserved", balanceMinor: 0 });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 0, debt: 0, refunded: 1000 });
  });

  it("more than the remainder: the row stored failed with its 422, nothing reserved, no lease", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    await claimRefund(refundRequest(user.id, topup, 800));
    // Remainder 200, balance 200: 201 exceeds the top-up first.
    const outcome = await claimRefund(refundRequest(user.id, topup, 201));
    expect(outcome.kind).toBe("stored_refusal");
    if (outcome.kind !== "stored_refusal") throw new Error("unreachable");
    expect(outcome.entry).toMatchObject({
      status: "failed",
      failureReason: "refund_exceeds_topup",
      response: REFUSALS.exceedsTopup,
      leaseOwner: null,
      leaseExpiresAt: null,
      refundsEntryId: topup.id,
    });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 200, debt: 0, refunded: 800 });
    // Born decided, like every entry: the claim, then its refusal (docs/decisions/053).
    expect(await transitionsOf(user.id, outcome.entry.id)).toEqual([
      { from: null, to: "initiated", actor: "admin", fencingToken: 1 },
      { from: "initiated", to: "failed", actor: "admin", fencingToken: 1 },
    ]);
    const detail = await testPool().query(
      "SELECT detail FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id",
      [user.id, outcome.entry.id],
    );
    expect(detail.rows.map((row) => row.detail)).toEqual([null, "claimed and refused: nothing reserved"]);
  });

  it("more than the balance: the row stored failed with its 402 insufficient_funds, nothing reserved", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    await setWallet(user.id, 299, 0);
    const outcome = await claimRefund(refundRequest(user.id, topup, 300));
    expect(outcome).toMatchObject({
      kind: "stored_refusal",
      entry: { status: "failed", failureReason: "insufficient_funds", response: REFUSALS.insufficientFunds },
    });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 299, debt: 0, refunded: 0 });
  });

  it("a debt open on the wallet: the row stored failed with its 402 debt_outstanding, before the balance is asked", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    // A debt with a balance beside it cannot happen through the app (credits repay the debt first); it is set here
    // so that only the debt clause can refuse this refund.
    await setWallet(user.id, 1000, 1);
    const outcome = await claimRefund(refundRequest(user.id, topup, 300));
    expect(outcome).toMatchObject({
      kind: "stored_refusal",
      entry: { status: "failed", failureReason: "debt_outstanding", response: REFUSALS.debtOutstanding },
    });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 1000, debt: 1, refunded: 0 });
    // As a chargeback leaves it (balance 0, debt owed): debt_outstanding still, not insufficient_funds.
    await setWallet(user.id, 0, 500);
    expect(await claimRefund(refundRequest(user.id, topup, 300))).toMatchObject({
      kind: "stored_refusal",
      entry: { failureReason: "debt_outstanding" },
    });
  });

  it("C26: a dispute open or lost on the top-up's charge: the row stored failed with its 422 topup_disputed, before the remainder, the debt or the balance are asked; won, the refund is reserved", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const setDispute = (status: string) =>
      testPool().query("UPDATE ledger_entries SET dispute_status = $3 WHERE user_id = $1 AND id = $2", [
        user.id,
        topup.id,
        status,
      ]);
    // A debt too, and more than the remainder: only the dispute clause may answer first.
    await setWallet(user.id, 0, 1);
    for (const status of ["open", "lost"]) {
      await setDispute(status);
      expect(await claimRefund(refundRequest(user.id, topup, 5000))).toMatchObject({
        kind: "stored_refusal",
        entry: {
          status: "failed",
          failureReason: "topup_disputed",
          response: REFUSALS.topupDisputed,
          leaseOwner: null,
        },
      });
    }
    expect(await findEntryByKey({ userId: user.id, type: "topup", refId: topup.refId })).toMatchObject({
      disputeStatus: "lost",
      refundedMinor: 0,
    });
    await setDispute("won");
    await setWallet(user.id, 1000, 0);
    expect(await claimRefund(refundRequest(user.id, topup, 1000))).toMatchObject({
      kind: "reserved",
      entry: { status: "initiated" },
    });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 0, debt: 0, refunded: 1000 });
  });

  it("a wallet row that does not exist counts as a zero balance and no debt: 402 insufficient_funds", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    await testPool().query("DELETE FROM wallets WHERE user_id = $1", [user.id]);
    expect(await claimRefund(refundRequest(user.id, topup, 1))).toMatchObject({
      kind: "stored_refusal",
      entry: { failureReason: "insufficient_funds" },
    });
  });

  it("refuses without claiming anything what is not a succeeded top-up of this user", async () => {
    const user = await createTestUser();
    const other = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const othersTopup = await succeededTopup(other.id, 1000);
    const unfinished = await claimEntry(claimRequest(user.id, { amountMinor: 1000 }));
    const reward = await claimEntry(claimRequest(user.id, { type: "reward", amountMinor: 10 }));
    await completeEntry(
      { userId: user.id, entryId: reward.id },
      { actor: "request", guard: { kind: "status_only" }, credit: true },
    );
    for (const target of [
      unfinished, // a top-up still initiated
      { id: reward.id, refId: reward.refId }, // a succeeded row that is no top-up
      { id: othersTopup.id, refId: othersTopup.refId }, // another user's top-up
    ]) {
      const request = refundRequest(user.id, target, 1);
      expect(await claimRefund(request)).toEqual({ kind: "topup_not_refundable" });
      const rows = await testPool().query("SELECT 1 FROM ledger_entries WHERE user_id = $1 AND ref_id = $2", [
        user.id,
        request.key.refId,
      ]);
      expect(rows.rowCount).toBe(0);
    }
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 1010, debt: 0, refunded: 0 });
  });

  it("a second claim of the key inserts nothing and moves nothing (taken), whatever its amount", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const request = refundRequest(user.id, topup, 300);
    expect((await claimRefund(request)).kind).toBe("reserved");
    expect(await claimRefund(request)).toEqual({ kind: "taken" });
    expect(await claimRefund({ ...request, amountMinor: 5 })).toEqual({ kind: "taken" });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 700, debt: 0, refunded: 300 });
  });
});

describe("releaseReservation", () => {
  async function reservedRefund(amountMinor = 300) {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const claimed = await claimRefund(refundRequest(user.id, topup, amountMinor));
    if (claimed.kind !== "reserved") throw new Error("expected a reservation");
    return { user, topup, refund: claimed.entry, ref: { userId: user.id, entryId: claimed.entry.id } };
  }

  it("fails the row and gives wallet and remainder back once, in one statement; a second call moves nothing", async () => {
    const { user, topup, refund, ref } = await reservedRefund();
    expect((await markProcessing(ref, refund.fencingToken, { actor: "admin" })).kind).toBe("moved");
    const released = await releaseReservation(ref, { actor: "webhook", detail: "bank says failed", bankRef: "rf_1" });
    expect(released).toMatchObject({ kind: "released", balanceMinor: 1000 });
    if (released.kind !== "released") throw new Error("unreachable");
    expect(released.entry).toMatchObject({
      status: "failed",
      failureReason: "declined_by_bank",
      bankChargeId: "rf_1",
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 1000, debt: 0, refunded: 0 });
    expect(await releaseReservation(ref, { actor: "reconciler", detail: "again" })).toEqual({ kind: "unchanged" });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 1000, debt: 0, refunded: 0 });
    expect(await transitionsOf(user.id, refund.id)).toEqual([
      { from: null, to: "initiated", actor: "admin", fencingToken: 1 },
      { from: "initiated", to: "processing", actor: "admin", fencingToken: 1 },
      { from: "processing", to: "failed", actor: "webhook", fencingToken: 1 },
    ]);
    const details = await testPool().query(
      "SELECT detail FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id",
      [user.id, refund.id],
    );
    expect(details.rows.at(-1)?.detail).toBe("bank says failed");
  });

  it("keeps a recorded bank refund id when none is given, and gives back an initiated row too", async () => {
    const { user, topup, ref } = await reservedRefund();
    await testPool().query("UPDATE ledger_entries SET bank_charge_id = 'rf_kept' WHERE user_id = $1 AND id = $2", [
      user.id,
      ref.entryId,
    ]);
    const released = await releaseReservation(ref, { actor: "reconciler", detail: "refused by the bank" });
    expect(released).toMatchObject({ kind: "released", entry: { bankChargeId: "rf_kept", status: "failed" } });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 1000, debt: 0, refunded: 0 });
  });

  it("gives nothing back for a refund that succeeded", async () => {
    const { user, topup, ref } = await reservedRefund();
    await completeEntry(ref, { actor: "webhook", guard: { kind: "status_only" }, credit: false });
    expect(await releaseReservation(ref, { actor: "webhook", detail: "late failure" })).toEqual({ kind: "unchanged" });
    expect(await moneyOf(user.id, topup.id)).toEqual({ balance: 700, debt: 0, refunded: 300 });
    expect((await getEntryById(ref))?.status).toBe("succeeded");
  });

  it("only releases refund rows: an unfinished top-up under the same call is left alone", async () => {
    const user = await createTestUser();
    const claimed = await claimEntry(claimRequest(user.id, { amountMinor: 500 }));
    const ref = { userId: user.id, entryId: claimed.id };
    expect(await releaseReservation(ref, { actor: "webhook", detail: "not a refund" })).toEqual({ kind: "unchanged" });
    expect((await getEntryById(ref))?.status).toBe("initiated");
  });

  it("repays a debt that opened while the refund was in flight before it raises the balance", async () => {
    // A chargeback took the balance (0) and left 200 owed while 300 were reserved for the refund.
    const partly = await reservedRefund(300);
    await setWallet(partly.user.id, 0, 200);
    const released = await releaseReservation(partly.ref, { actor: "webhook", detail: "bank says failed" });
    expect(released).toMatchObject({ kind: "released", balanceMinor: 100 });
    expect(await moneyOf(partly.user.id, partly.topup.id)).toEqual({ balance: 100, debt: 0, refunded: 0 });
    // A debt larger than the refund: all of it goes to the debt, none to the balance.
    const wholly = await reservedRefund(300);
    await setWallet(wholly.user.id, 0, 1000);
    await releaseReservation(wholly.ref, { actor: "webhook", detail: "bank says failed" });
    expect(await moneyOf(wholly.user.id, wholly.topup.id)).toEqual({ balance: 0, debt: 700, refunded: 0 });
  });
});

describe("listRefundsOf", () => {
  it("lists a top-up's refunds of any status, oldest first, and no other top-up's", async () => {
    const user = await createTestUser();
    const topup = await succeededTopup(user.id, 1000);
    const other = await succeededTopup(user.id, 1000);
    const first = await claimRefund(refundRequest(user.id, topup, 100));
    const refused = await claimRefund(refundRequest(user.id, topup, 5000));
    await claimRefund(refundRequest(user.id, other, 100));
    const listed = await listRefundsOf({ userId: user.id, id: topup.id });
    expect(listed.map((entry) => [entry.amountMinor, entry.status])).toEqual([
      [100, "initiated"],
      [5000, "failed"],
    ]);
    expect(first.kind).toBe("reserved");
    expect(refused.kind).toBe("stored_refusal");
    expect(await listRefundsOf({ userId: user.id, id: 0 })).toEqual([]);
  });
});
