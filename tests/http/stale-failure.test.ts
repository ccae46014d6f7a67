/**
 * C14: an event's type and arrival order are claims, not facts (contract section 5). Nothing fails a top-up on an
 * event's word: the app asks the bank first, so a charge that succeeded always ends credited, once, whatever
 * arrived first. Real app, real sandbox bank, real PostgreSQL, real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCharge } from "../../lib/bank/client";
import { getEntryById, markProcessing } from "../../lib/ledger/transitions";
import { freePort } from "../../scripts/lib/ports";
import type { Service } from "../../scripts/lib/processes";
import { startExtraApp } from "../helpers/extra-app";
import { testPool } from "../helpers/db";
import {
  api,
  bankChargesFor,
  createApiUser,
  signWebhookBody,
  waitForBankCharge,
  waitForTopupStatus,
  type ApiUser,
} from "../helpers/http";
import { balanceOf, claimEntry, claimRequest, freshRefId } from "../helpers/ledger";
import { appUrl, bankUrl } from "../helpers/stack";
import { waitFor } from "../helpers/wait";

function eventBody(
  id: string,
  type: "charge.succeeded" | "charge.failed" | "charge.disputed",
  data: { chargeId: string; merchantRef: string; amount: number; currency: string; [more: string]: unknown },
): string {
  return JSON.stringify({ id, type, created: new Date().toISOString(), data });
}

function deliver(rawBody: string, baseUrl = appUrl()) {
  return fetch(`${baseUrl}/api/v1/bank/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "bank-signature": signWebhookBody(rawBody) },
    body: rawBody,
  });
}

async function recorded(eventId: string) {
  const result = await testPool().query("SELECT outcome, detail FROM bank_webhook_events WHERE event_id = $1", [
    eventId,
  ]);
  return result.rows[0] as { outcome: string; detail: string | null } | undefined;
}

async function succeededCredits(userId: string): Promise<number> {
  const result = await testPool().query(
    "SELECT count(*)::int AS n FROM ledger_transitions WHERE user_id = $1 AND to_status = 'succeeded'",
    [userId],
  );
  return result.rows[0].n;
}

/** A top-up through the API whose charge succeeded at the bank, and whose webhook the bank never sends. */
async function succeededAtTheBank(user: ApiUser, amount: number) {
  const refId = freshRefId("sbx-nohook-c14");
  expect((await api("/api/v1/topups", { token: user.token, body: { refId, amount } })).status).toBe(201);
  const merchantRef = `topup:${user.id}:${refId}`;
  const charge = await waitForBankCharge(merchantRef, (found) => found.status === "succeeded");
  const data = { chargeId: charge.id, merchantRef, amount, currency: "USD" };
  return { refId, merchantRef, data };
}

/** A top-up row waiting for the bank (claimed and `processing`), as a live request leaves it, with no charge made. */
async function processingRow(userId: string, amountMinor: number) {
  const refId = freshRefId("c14-row");
  const claim = await claimEntry(claimRequest(userId, { refId, amountMinor }));
  const ref = { userId, entryId: claim.id };
  await markProcessing(ref, claim.fencingToken);
  return { refId, ref, merchantRef: `topup:${userId}:${refId}` };
}

describe("C14: a stale charge.failed never fails a charge that succeeded", () => {
  it("C14: charge.failed first, then charge.succeeded (signed, by hand): the row ends succeeded, credited once", async () => {
    const user = await createApiUser();
    const { refId, data } = await succeededAtTheBank(user, 1430);
    const failed = await deliver(eventBody(`evt_c14f_${refId}`, "charge.failed", data));
    expect(failed.status).toBe(200);
    // The failure was checked with the bank, which says succeeded: the row is credited from the bank's answer.
    expect(await recorded(`evt_c14f_${refId}`)).toMatchObject({
      outcome: "credited",
      detail: expect.stringContaining("not confirmed"),
    });
    expect((await deliver(eventBody(`evt_c14s_${refId}`, "charge.succeeded", data))).status).toBe(200);
    expect(await recorded(`evt_c14s_${refId}`)).toMatchObject({ outcome: "duplicate" });
    expect((await waitForTopupStatus(user.token, refId)).status).toBe("succeeded");
    expect(await balanceOf(user.id)).toBe(1430);
    expect(await succeededCredits(user.id)).toBe(1);
  });

  it("C14: charge.succeeded first, then the stale charge.failed: the row stays succeeded, credited once", async () => {
    const user = await createApiUser();
    const { refId, data } = await succeededAtTheBank(user, 770);
    expect((await deliver(eventBody(`evt_c14s_${refId}`, "charge.succeeded", data))).status).toBe(200);
    expect((await deliver(eventBody(`evt_c14f_${refId}`, "charge.failed", data))).status).toBe(200);
    expect(await recorded(`evt_c14s_${refId}`)).toMatchObject({ outcome: "credited" });
    expect(await recorded(`evt_c14f_${refId}`)).toMatchObject({ outcome: "ignored_stale" });
    expect((await waitForTopupStatus(user.token, refId)).status).toBe("succeeded");
    expect(await balanceOf(user.id)).toBe(770);
    expect(await succeededCredits(user.id)).toBe(1);
  });

  it("C14: sbx-reorder- (the success held back while a stale failure goes through): the row ends succeeded, credited once", async () => {
    const user = await createApiUser();
    const refId = freshRefId("sbx-reorder-c14");
    const created = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 2210 } });
    expect(created.status).toBe(201);
    expect((await waitForTopupStatus(user.token, refId)).status).toBe("succeeded");
    const merchantRef = `topup:${user.id}:${refId}`;
    // The bank sent the stale failure first and held the success until the failure was answered.
    type Delivery = { type: string; status: string; attempts: Array<{ startedAt: string; status?: number }> };
    const deliveries = await waitFor(
      async () => {
        const response = await fetch(`${bankUrl()}/_sandbox/deliveries?${new URLSearchParams({ merchantRef })}`);
        return ((await response.json()) as { deliveries: Delivery[] }).deliveries;
      },
      (found) => found.length === 2 && found.every((d) => d.status === "delivered"),
      { what: "both deliveries to finish", timeoutMs: 15_000, intervalMs: 50 },
    );
    const failure = deliveries.find((d) => d.type === "charge.failed")!;
    const success = deliveries.find((d) => d.type === "charge.succeeded")!;
    expect(failure.attempts.map((a) => a.status)).toEqual([200]);
    expect(Date.parse(success.attempts[0]!.startedAt)).toBeGreaterThanOrEqual(
      Date.parse(failure.attempts[0]!.startedAt),
    );
    expect(await balanceOf(user.id)).toBe(2210);
    expect(await succeededCredits(user.id)).toBe(1);
    // The stored first response and a retry of the request agree with the row.
    const retry = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 2210 } });
    expect(retry.text).toBe(created.text);
  });
});

describe("failure events are confirmed with the bank before any row fails", () => {
  it("for a reference the bank has no charge for, the key is made unusable at the bank first, then the row fails (expired)", async () => {
    const user = await createApiUser();
    const { refId, ref, merchantRef } = await processingRow(user.id, 400);
    const body = eventBody(`evt_nocharge_${refId}`, "charge.failed", {
      chargeId: `ch_none_${refId}`,
      merchantRef,
      amount: 400,
      currency: "USD",
    });
    expect((await deliver(body)).status).toBe(200);
    expect(await getEntryById(ref)).toMatchObject({ status: "failed", failureReason: "expired" });
    // The bank refuses any charge for that key from now on, so a request still in flight can never charge it.
    const late = await createCharge(
      { merchantRef, amountMinor: 400, currency: "USD" },
      { bankUrl: bankUrl(), timeoutMs: 5000 },
    );
    expect(late).toEqual({ kind: "rejected", status: 409, code: "idempotency_key_cancelled" });
    expect(await bankChargesFor(merchantRef)).toEqual([]);
    expect(await recorded(`evt_nocharge_${refId}`)).toMatchObject({ outcome: "failed" });
  });

  describe("with the bank unreachable", () => {
    let app: Service | null = null;
    let unreachableAppUrl = "";
    beforeAll(async () => {
      const port = await freePort();
      unreachableAppUrl = `http://127.0.0.1:${port}`;
      // A bank URL on which nothing listens: every confirmation fails with ECONNREFUSED.
      app = await startExtraApp({ name: "c14-bank-down", port, bankUrl: `http://127.0.0.1:${await freePort()}` });
    }, 120_000);
    afterAll(async () => {
      await app?.stop();
    });

    it("a charge.failed answers 503 and leaves the row as it was; a signed success still credits", async () => {
      const user = await createApiUser();
      const { refId, ref, merchantRef } = await processingRow(user.id, 650);
      const data = { chargeId: `ch_down_${refId}`, merchantRef, amount: 650, currency: "USD" };
      const before = await getEntryById(ref);
      const failed = await deliver(eventBody(`evt_down_f_${refId}`, "charge.failed", data), unreachableAppUrl);
      expect(failed.status).toBe(503);
      expect(await failed.json()).toMatchObject({
        code: "service_unavailable",
        detail: expect.stringMatching(/^The failure could not be confirmed with the bank \(/),
      });
      expect(await getEntryById(ref)).toEqual(before);
      expect(await recorded(`evt_down_f_${refId}`)).toBeUndefined();
      // The success path needs no confirmation (contract section 5: the success path is unchanged).
      const succeeded = await deliver(eventBody(`evt_down_s_${refId}`, "charge.succeeded", data), unreachableAppUrl);
      expect(succeeded.status).toBe(200);
      expect(await getEntryById(ref)).toMatchObject({ status: "succeeded" });
      expect(await balanceOf(user.id)).toBe(650);
    });

    it("a dispute event answers 503 with its own sentence (the dispute could not be looked up), nothing moved", async () => {
      const user = await createApiUser();
      const refId = freshRefId("down-dispute");
      const data = {
        chargeId: `ch_down_${refId}`,
        merchantRef: `topup:${user.id}:${refId}`,
        amount: 300,
        currency: "USD",
        disputeId: `dp_down_${refId}`,
        status: "open",
      };
      const answered = await deliver(eventBody(`evt_down_d_${refId}`, "charge.disputed", data), unreachableAppUrl);
      expect(answered.status).toBe(503);
      const problem = (await answered.json()) as { code: string; detail: string };
      expect(problem.code).toBe("service_unavailable");
      expect(problem.detail).toMatch(
        /^The dispute could not be looked up at the bank \(dispute lookup: .+\); no money moved\./,
      );
      expect(problem.detail).not.toContain("The failure could not be confirmed");
      expect(await recorded(`evt_down_d_${refId}`)).toBeUndefined();
    });
  });
});
