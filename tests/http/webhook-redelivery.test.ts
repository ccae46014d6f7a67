/**
 * The bank webhook over real HTTP (contract section 5; case C04): redeliveries, much later redeliveries, bad and
 * stale signatures, and events that cannot be applied (answered 200, credited nothing, recorded and listed for
 * admins). Real app, real sandbox bank, real PostgreSQL. Top-ups use the `sbx-nohook-` switch, so the bank
 * sends no webhook of its own: every delivery in these tests is one the test makes, signed like the bank signs.
 */
import { describe, expect, it } from "vitest";
import { listWebhookAnomalies } from "../../lib/admin/list-webhook-anomalies";
import { testPool } from "../helpers/db";
import {
  api,
  createApiUser,
  signWebhookBody,
  waitForBankCharge,
  waitForTopupStatus,
  type ApiUser,
} from "../helpers/http";
import { balanceOf, freshRefId } from "../helpers/ledger";
import { randomWebhookSecret } from "../../scripts/lib/secrets";

/** Polls the stack's bank (every 50 ms, at most 10 s) until the charge of `merchantRef` is no longer pending. */
async function settledCharge(
  merchantRef: string,
): Promise<{ id: string; status: string; amount: number; currency: string }> {
  return waitForBankCharge(merchantRef);
}

/** A top-up through the API whose bank charge has settled, and whose webhook the bank will never send. */
async function toppedUpWithoutWebhook(user: ApiUser, amount: number, prefix = "sbx-nohook-") {
  const refId = freshRefId(prefix);
  const created = await api("/api/v1/topups", { token: user.token, body: { refId, amount } });
  expect(created.status).toBe(201);
  const merchantRef = `topup:${user.id}:${refId}`;
  const charge = await settledCharge(merchantRef);
  return { refId, merchantRef, charge };
}

function eventBody(
  id: string,
  type: "charge.succeeded" | "charge.failed",
  data: { chargeId: string; merchantRef: string; amount: number; currency: string },
): string {
  return JSON.stringify({ id, type, created: new Date().toISOString(), data });
}

function deliver(rawBody: string, signature = signWebhookBody(rawBody)) {
  return api("/api/v1/bank/webhook", { rawBody, headers: { "bank-signature": signature } });
}

async function recordedEvent(eventId: string): Promise<{ outcome: string; deliveries: number } | undefined> {
  const result = await testPool().query("SELECT outcome, deliveries FROM bank_webhook_events WHERE event_id = $1", [
    eventId,
  ]);
  return result.rows[0];
}

describe("bank webhook deliveries", () => {
  it("C04: delivered, redelivered, and redelivered again 25 hours later: exactly one credit, every delivery 2xx", async () => {
    const user = await createApiUser();
    const { refId, merchantRef, charge } = await toppedUpWithoutWebhook(user, 1875);
    expect(charge.status).toBe("succeeded");
    const eventId = `evt_c04_${refId}`;
    const body = eventBody(eventId, "charge.succeeded", {
      chargeId: charge.id,
      merchantRef,
      amount: 1875,
      currency: "USD",
    });

    // First delivery: the handler commits the credit. Whether the bank then saw the answer or not (a lost
    // response), it redelivers the same bytes.
    const first = await deliver(body);
    const again = await deliver(body);
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(await balanceOf(user.id)).toBe(1875);

    // 25 hours later: the row and the recorded event are a day old, and nothing in Redis remembers anything
    // (the webhook path never used Redis: deduplication is the row's state). A fresh signature, the same bytes.
    await testPool().query(
      "UPDATE ledger_entries SET created_at = created_at - interval '25 hours', updated_at = updated_at - interval '25 hours' WHERE user_id = $1",
      [user.id],
    );
    await testPool().query(
      "UPDATE bank_webhook_events SET first_seen_at = first_seen_at - interval '25 hours', last_seen_at = last_seen_at - interval '25 hours' WHERE event_id = $1",
      [eventId],
    );
    const late = await deliver(body);
    expect(late.status).toBe(200);
    expect(late.json).toEqual({ received: true });

    expect(await balanceOf(user.id)).toBe(1875);
    expect(await recordedEvent(eventId)).toEqual({ outcome: "credited", deliveries: 3 });
    expect((await waitForTopupStatus(user.token, refId)).status).toBe("succeeded");
    const transitions = await testPool().query(
      "SELECT count(*)::int AS n FROM ledger_transitions t JOIN ledger_entries e ON e.user_id = t.user_id AND e.id = t.entry_id WHERE e.user_id = $1 AND t.to_status = 'succeeded'",
      [user.id],
    );
    expect(transitions.rows[0].n).toBe(1);
  });

  it("a stale charge.failed after the success (reordered delivery) is answered 200 and changes nothing", async () => {
    const user = await createApiUser();
    const { refId, merchantRef, charge } = await toppedUpWithoutWebhook(user, 640);
    const data = { chargeId: charge.id, merchantRef, amount: 640, currency: "USD" };
    expect((await deliver(eventBody(`evt_ok_${refId}`, "charge.succeeded", data))).status).toBe(200);
    const stale = await deliver(eventBody(`evt_stale_${refId}`, "charge.failed", data));
    expect(stale.status).toBe(200);
    expect(await balanceOf(user.id)).toBe(640);
    expect((await waitForTopupStatus(user.token, refId)).status).toBe("succeeded");
    expect(await recordedEvent(`evt_stale_${refId}`)).toMatchObject({ outcome: "ignored_stale" });
  });

  it("a bad or stale signature is 400 and changes nothing, not even the event record", async () => {
    const user = await createApiUser();
    const { refId, merchantRef, charge } = await toppedUpWithoutWebhook(user, 320);
    const eventId = `evt_badsig_${refId}`;
    const body = eventBody(eventId, "charge.succeeded", {
      chargeId: charge.id,
      merchantRef,
      amount: 320,
      currency: "USD",
    });
    // Stale by more than the 300 s tolerance measured when each request is sent: on a loaded machine seconds can
    // pass between two deliveries, so a signature only 301 s off could be inside the tolerance by the time it is
    // checked. The exact boundary is tested without HTTP in tests/unit/bank-signature.test.ts.
    const nowS = () => Math.floor(Date.now() / 1000);
    const refusals = [
      await deliver(body, signWebhookBody(body, nowS(), randomWebhookSecret())),
      await deliver(body, signWebhookBody(body, nowS() - 360)),
      await deliver(body, signWebhookBody(body, nowS() + 360)),
      await deliver(body, "t=abc,v1=zz"),
      await api("/api/v1/bank/webhook", { rawBody: body }),
      await deliver(body.replace("320", "321"), signWebhookBody(body)),
    ];
    for (const refused of refusals) {
      expect(refused.status, refused.text).toBe(400);
      expect(refused.json).toMatchObject({ code: "invalid_signature" });
    }
    expect(await balanceOf(user.id)).toBe(0);
    expect(await recordedEvent(eventId)).toBeUndefined();
  });

  it("events that cannot be applied are answered 200, credit nothing, are recorded and listed for admins", async () => {
    const user = await createApiUser();
    const ok = await toppedUpWithoutWebhook(user, 500);
    const declined = await toppedUpWithoutWebhook(user, 700, "sbx-decline-");
    expect(declined.charge.status).toBe("declined");
    expect((await waitForTopupStatus(user.token, declined.refId)).status).toBe("failed");

    const cases: Array<{ id: string; body: string; outcome: string }> = [];
    const add = (
      suffix: string,
      type: "charge.succeeded" | "charge.failed",
      data: { chargeId: string; merchantRef: string; amount: number; currency: string },
      outcome: string,
    ) => {
      const id = `evt_${suffix}_${ok.refId}`;
      cases.push({ id, body: eventBody(id, type, data), outcome });
    };
    add(
      "amount",
      "charge.succeeded",
      { chargeId: ok.charge.id, merchantRef: ok.merchantRef, amount: 5000, currency: "USD" },
      "anomaly_amount_mismatch",
    );
    add(
      "currency",
      "charge.succeeded",
      { chargeId: ok.charge.id, merchantRef: ok.merchantRef, amount: 500, currency: "EUR" },
      "anomaly_currency_mismatch",
    );
    add(
      "unknown",
      "charge.succeeded",
      {
        chargeId: "ch_unknown",
        merchantRef: `topup:${user.id}:never-claimed-${ok.refId}`,
        amount: 500,
        currency: "USD",
      },
      "anomaly_unknown_merchant_ref",
    );
    add(
      "foreign",
      "charge.succeeded",
      { chargeId: "ch_foreign", merchantRef: "order:somewhere-else", amount: 500, currency: "USD" },
      "anomaly_unknown_merchant_ref",
    );
    add(
      "failedrow",
      "charge.succeeded",
      { chargeId: declined.charge.id, merchantRef: declined.merchantRef, amount: 700, currency: "USD" },
      "anomaly_success_for_failed_row",
    );

    for (const { body } of cases) {
      const answered = await deliver(body);
      expect(answered.status).toBe(200);
      expect(answered.json).toEqual({ received: true });
    }
    // A signed body that is not an event at all.
    const garbage = `{"not":"an event ${ok.refId}"}`;
    expect((await deliver(garbage)).status).toBe(200);

    expect(await balanceOf(user.id)).toBe(0);
    for (const { id, outcome } of cases) expect(await recordedEvent(id), id).toMatchObject({ outcome, deliveries: 1 });
    const listed = await listWebhookAnomalies();
    for (const { id } of cases)
      expect(
        listed.some((a) => a.eventId === id),
        id,
      ).toBe(true);
    expect(listed.some((a) => a.outcome === "unusable_event")).toBe(true);

    // The genuine event for the first top-up still applies afterwards, once.
    const genuine = eventBody(`evt_genuine_${ok.refId}`, "charge.succeeded", {
      chargeId: ok.charge.id,
      merchantRef: ok.merchantRef,
      amount: 500,
      currency: "USD",
    });
    expect((await deliver(genuine)).status).toBe(200);
    expect(await balanceOf(user.id)).toBe(500);
  });
});
