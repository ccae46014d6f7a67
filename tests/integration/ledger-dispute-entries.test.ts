/**
 * lib/ledger's two storage calls that the webhook's fast path and a dispute's door send (contract sections 5 and 12;
 * docs/decisions/045, 048 and 053), called directly on a real PostgreSQL: `settleFromWebhook` (the unfinished
 * top-up a charge matches credited and the event recorded, in one statement, or nothing written),
 * `noteDisputeStatus` (only ever forward) and `landBankEntry` (a chargeback debited into debt where the balance
 * is short, a reversal repaying debt first, each claimed once by its dispute id). The paths above them
 * (tests/integration/chargebacks.test.ts, settle-matching-entry.test.ts, tests/http/webhook-events.test.ts) run
 * with the sandbox bank; these pin what each call itself answers and writes, so mutation testing of lib/ledger
 * reaches them.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { landBankEntry, noteDisputeStatus } from "../../lib/ledger/dispute-entries";
import { fingerprint } from "../../lib/ledger/fingerprint";
import type { LedgerType } from "../../lib/ledger/keys";
import { completeEntry, getEntryById, markProcessing } from "../../lib/ledger/transitions";
import { settleFromWebhook, type WebhookSuccess } from "../../lib/ledger/webhook-settlement";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf, claimEntry, claimRequest, seedBalance, transitionsOf } from "../helpers/ledger";

/** A top-up of `amountMinor` charged as `chargeId`, left `processing` (the webhook's door finds it unfinished). */
async function processingTopup(userId: string, amountMinor: number) {
  const claimed = await claimEntry(claimRequest(userId, { amountMinor }));
  const ref = { userId, entryId: claimed.id };
  const moved = await markProcessing(ref, claimed.fencingToken);
  if (moved.kind !== "moved") throw new Error("setup: the top-up did not move to processing");
  return moved.entry;
}

/** A top-up of `amountMinor` credited (succeeded), the entry a dispute is noted on. */
async function creditedTopup(userId: string, amountMinor: number) {
  const entry = await processingTopup(userId, amountMinor);
  const ref = { userId, entryId: entry.id };
  const guard = { kind: "lease", fencingToken: entry.fencingToken } as const;
  await completeEntry(ref, { actor: "request", guard, credit: true });
  return entry;
}

function chargeOf(userId: string, refId: string, amountMinor: number, currency = "USD"): WebhookSuccess {
  return {
    entryType: "topup",
    userId,
    refId,
    eventId: `evt_${randomUUID()}`,
    eventType: "charge.succeeded",
    merchantRef: `topup:${userId}:${refId}`,
    bankId: `ch_${randomUUID()}`,
    amountMinor,
    currency,
    payload: JSON.stringify({ amount: amountMinor, currency }),
  };
}

async function eventRecord(eventId: string) {
  const result = await testPool().query(
    "SELECT type, merchant_ref, charge_id, amount_minor::int AS amount_minor, currency, outcome, payload FROM bank_webhook_events WHERE event_id = $1",
    [eventId],
  );
  return result.rows[0] ?? null;
}

async function debtOf(userId: string): Promise<number> {
  const result = await testPool().query<{ d: string }>("SELECT debt_minor::text AS d FROM wallets WHERE user_id = $1", [
    userId,
  ]);
  return Number(result.rows[0]?.d ?? 0);
}

function disputeRequest(userId: string, type: LedgerType, disputeId: string, amountMinor: number) {
  return {
    key: { userId, type, refId: disputeId },
    amountMinor,
    currency: "USD",
    params: { amount: amountMinor, currency: "USD", charge: "ch_disputed" },
    actor: "webhook" as const,
    detail: `webhook: dispute ${disputeId}`,
  };
}

describe("settleFromWebhook", () => {
  it("credits the unfinished top-up the charge matches, with its charge id, and records the event as credited", async () => {
    const user = await createTestUser();
    const topup = await processingTopup(user.id, 1250);
    const charge = chargeOf(user.id, topup.refId, 1250);
    expect(await settleFromWebhook(charge, testPool())).not.toBeNull();
    expect(await getEntryById({ userId: user.id, entryId: topup.id })).toMatchObject({
      status: "succeeded",
      bankChargeId: charge.bankId,
    });
    expect(await balanceOf(user.id)).toBe(1250);
    expect(await eventRecord(charge.eventId)).toEqual({
      type: "charge.succeeded",
      merchant_ref: charge.merchantRef,
      charge_id: charge.bankId,
      amount_minor: 1250,
      currency: "USD",
      outcome: "credited",
      payload: charge.payload,
    });
    expect((await transitionsOf(user.id, topup.id)).at(-1)).toMatchObject({ to: "succeeded", actor: "webhook" });
  });

  it("writes nothing and answers null for a charge of another amount or currency, or a top-up already credited", async () => {
    const user = await createTestUser();
    const topup = await processingTopup(user.id, 1250);
    for (const charge of [chargeOf(user.id, topup.refId, 1249), chargeOf(user.id, topup.refId, 1250, "EUR")]) {
      expect(await settleFromWebhook(charge, testPool())).toBeNull();
      expect(await eventRecord(charge.eventId)).toBeNull();
    }
    expect(await getEntryById({ userId: user.id, entryId: topup.id })).toMatchObject({ status: "processing" });
    expect(await settleFromWebhook(chargeOf(user.id, topup.refId, 1250))).not.toBeNull();
    const again = chargeOf(user.id, topup.refId, 1250);
    expect(await settleFromWebhook(again)).toBeNull();
    expect(await balanceOf(user.id)).toBe(1250);
  });
});

describe("noteDisputeStatus", () => {
  it("moves a credited entry's dispute state only forward: open, lost, won; a stale or repeated word changes nothing", async () => {
    const user = await createTestUser();
    const topup = await creditedTopup(user.id, 1000);
    const credited = { userId: user.id, id: topup.id };
    expect(await noteDisputeStatus(testPool(), credited, "open")).toBe(true);
    expect(await noteDisputeStatus(testPool(), credited, "open")).toBe(false);
    expect(await noteDisputeStatus(testPool(), credited, "lost")).toBe(true);
    expect(await noteDisputeStatus(testPool(), credited, "open")).toBe(false);
    expect((await getEntryById({ userId: user.id, entryId: topup.id }))?.disputeStatus).toBe("lost");
    expect(await noteDisputeStatus(testPool(), credited, "won")).toBe(true);
    expect((await getEntryById({ userId: user.id, entryId: topup.id }))?.disputeStatus).toBe("won");
  });

  it("answers null for an entry that is not the user's", async () => {
    const user = await createTestUser();
    const other = await createTestUser();
    const topup = await creditedTopup(user.id, 1000);
    expect(await noteDisputeStatus(testPool(), { userId: other.id, id: topup.id }, "open")).toBe(false);
    expect((await getEntryById({ userId: user.id, entryId: topup.id }))?.disputeStatus).toBeNull();
  });
});

describe("landBankEntry", () => {
  it("a chargeback is born succeeded, debits the balance and the rest into debt, once per dispute id", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 300);
    const disputeId = `dp_${randomUUID()}`;
    const request = disputeRequest(user.id, "chargeback", disputeId, 1000);
    const landed = await landBankEntry(testPool(), request);
    expect(landed).toMatchObject({
      userId: user.id,
      type: "chargeback",
      refId: disputeId,
      amountMinor: 1000,
      currency: "USD",
      status: "succeeded",
      fingerprint: fingerprint("chargeback", request.params),
      params: request.params,
    });
    expect(await balanceOf(user.id)).toBe(0);
    expect(await debtOf(user.id)).toBe(700);
    const audit = await transitionsOf(user.id, landed?.id ?? -1);
    expect(audit.map((t) => t.to)).toEqual(["initiated", "succeeded"]);
    expect(audit.every((t) => t.actor === "webhook")).toBe(true);

    expect(await landBankEntry(testPool(), request)).toBeNull();
    expect(await balanceOf(user.id)).toBe(0);
    expect(await debtOf(user.id)).toBe(700);
  });

  it("a reversal repays the debt first and credits the rest", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 300);
    const disputeId = `dp_${randomUUID()}`;
    await landBankEntry(testPool(), disputeRequest(user.id, "chargeback", disputeId, 1000));
    const reversal = await landBankEntry(testPool(), disputeRequest(user.id, "chargeback_reversal", disputeId, 1000));
    expect(reversal).toMatchObject({ type: "chargeback_reversal", refId: disputeId, status: "succeeded" });
    expect(await debtOf(user.id)).toBe(0);
    expect(await balanceOf(user.id)).toBe(300);
  });

  it("refuses a key of any other type before sending anything", async () => {
    const user = await createTestUser();
    const refId = `dp_${randomUUID()}`;
    for (const type of ["topup", "refund", "payment"] as const) {
      await expect(landBankEntry(testPool(), disputeRequest(user.id, type, refId, 100))).rejects.toThrow(
        `landBankEntry: a ${type} key is not an entry the bank's word lands`,
      );
    }
    const rows = await testPool().query("SELECT 1 FROM ledger_entries WHERE user_id = $1", [user.id]);
    expect(rows.rowCount).toBe(0);
  });
});
