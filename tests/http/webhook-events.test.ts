/**
 * What the webhook records about signed events (contract section 5), over real HTTP against the built app:
 * - C18: a signed event that cannot be stored or applied as it is (a `\u0000` PostgreSQL refuses, fields of the
 *   wrong type, bytes that are not UTF-8 or not JSON) answers 200, is recorded as unusable and listed for admins,
 *   and is never a 500 the bank would redeliver forever;
 * - C19: when the same event is delivered several times at once, the delivery that credited is the one recorded
 *   (`credited`), the others count as deliveries of it.
 */
import { describe, expect, it } from "vitest";
import { listWebhookAnomalies } from "../../lib/admin/list-webhook-anomalies";
import { markProcessing } from "../../lib/ledger/transitions";
import { testPool } from "../helpers/db";
import { api, createApiUser, signWebhookBody } from "../helpers/http";
import { balanceOf, claimEntry, claimRequest, freshRefId } from "../helpers/ledger";
import { appUrl } from "../helpers/stack";

function deliver(rawBody: string | Buffer, signature = signWebhookBody(rawBody)) {
  return fetch(`${appUrl()}/api/v1/bank/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", "bank-signature": signature },
    body: typeof rawBody === "string" ? rawBody : new Uint8Array(rawBody),
  });
}

async function recordedEvents(where: string, values: unknown[]) {
  const result = await testPool().query(
    `SELECT event_id, type, merchant_ref, charge_id, outcome, deliveries, detail, payload
       FROM bank_webhook_events WHERE ${where}`,
    values,
  );
  return result.rows as Array<{
    event_id: string;
    type: string;
    merchant_ref: string | null;
    charge_id: string | null;
    outcome: string;
    deliveries: number;
    detail: string | null;
    payload: string;
  }>;
}

/** A top-up row waiting for the bank's word (claimed, `processing`), as a live request leaves it. */
async function processingTopup(userId: string, amountMinor: number) {
  const refId = freshRefId("c19");
  const claim = await claimEntry(claimRequest(userId, { refId, amountMinor }));
  await markProcessing({ userId, entryId: claim.id }, claim.fencingToken);
  return { refId, merchantRef: `topup:${userId}:${refId}` };
}

describe("C18: signed events PostgreSQL cannot store as they are", () => {
  it("C18: a signed event whose merchantRef holds \\u0000 answers 200, is recorded as unusable and shown to admins", async () => {
    const chargeId = `ch_c18_${freshRefId()}`;
    const body = JSON.stringify({
      id: `evt_c18_${freshRefId()}`,
      type: "charge.succeeded",
      data: { chargeId, merchantRef: "topup:u1:r\u00001", amount: 100, currency: "USD" },
    });
    expect(body).toContain("\\u0000");
    const answers = await Promise.all([deliver(body), deliver(body)]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(await answers[0]!.json()).toEqual({ received: true });

    const [recorded] = await recordedEvents("charge_id = $1", [chargeId]);
    expect(recorded).toMatchObject({
      type: "unusable",
      outcome: "unusable_event",
      deliveries: 2,
      merchant_ref: "topup:u1:r\\u00001",
      detail: expect.stringContaining("data.merchantRef"),
    });
    expect(recorded!.event_id).toMatch(/^unusable:[0-9a-f]{64}$/);
    const listed = await listWebhookAnomalies();
    expect(listed.some((a) => a.chargeId === chargeId && a.outcome === "unusable_event")).toBe(true);
  });

  it("C18: raw NUL bytes, bytes that are not UTF-8, and fields of the wrong type are unusable too, never a 500", async () => {
    const tag = freshRefId("c18");
    const bodies: Buffer[] = [
      Buffer.from(`{"id":"evt_${tag}_nul","type":"charge.succeeded","data":{"chargeId":"x\u0000"}}`, "utf8"),
      Buffer.concat([
        Buffer.from(`{"id":"evt_${tag}_latin1","note":"`),
        Buffer.from([0xff, 0xfe, 0x00]),
        Buffer.from('"}'),
      ]),
      Buffer.from(
        JSON.stringify({
          id: `evt_${tag}_types`,
          type: "charge.succeeded",
          data: { chargeId: `ch_${tag}`, merchantRef: "topup:u:r", amount: "100", currency: "USD" },
        }),
      ),
      Buffer.from(JSON.stringify({ id: `evt_${tag}_refund`, type: "charge.refunded", data: {} })),
    ];
    for (const body of bodies) {
      const answer = await deliver(body);
      expect(answer.status, body.toString("latin1")).toBe(200);
    }
    const recorded = await recordedEvents("payload LIKE $1", [`%${tag}%`]);
    expect(recorded).toHaveLength(bodies.length);
    for (const row of recorded) {
      expect(row.outcome).toBe("unusable_event");
      expect(row.payload).not.toContain("\u0000");
      expect(row.detail).toBeTruthy();
    }
    // The same bytes delivered again are another delivery of the same record, not a new one.
    await deliver(bodies[0]!);
    expect(await recordedEvents("payload LIKE $1", [`%${tag}%`])).toHaveLength(bodies.length);
  });

  it("an unsigned or wrongly signed unusable body is still refused with 400 and recorded nowhere", async () => {
    const tag = freshRefId("c18-unsigned");
    const body = `{"id":"evt_${tag}","data":{"merchantRef":"a\\u0000"}}`;
    expect((await deliver(body, "t=1,v1=00")).status).toBe(400);
    expect(await recordedEvents("payload LIKE $1", [`%${tag}%`])).toEqual([]);
  });
});

describe("C19: the audit trail of concurrent duplicate deliveries", () => {
  it("C19: the same signed charge.succeeded delivered 3 times at once, for 100 events: each recorded `credited` once, 3 deliveries, one credit", async () => {
    const user = await createApiUser();
    const EVENTS = 100;
    const COPIES = 3;
    /** Events delivered at a time (each with its 3 copies at once): 30 requests in flight on 2 cores. */
    const EVENTS_AT_ONCE = 10;
    const tops = [];
    for (let i = 0; i < EVENTS; i++) tops.push(await processingTopup(user.id, 100 + i));
    const events = tops.map(({ refId, merchantRef }, i) => ({
      eventId: `evt_c19_${refId}`,
      body: JSON.stringify({
        id: `evt_c19_${refId}`,
        type: "charge.succeeded",
        data: { chargeId: `ch_${refId}`, merchantRef, amount: 100 + i, currency: "USD" },
      }),
    }));
    for (let start = 0; start < EVENTS; start += EVENTS_AT_ONCE) {
      const batch = events.slice(start, start + EVENTS_AT_ONCE);
      const answers = await Promise.all(
        batch.flatMap(({ body }) => Array.from({ length: COPIES }, () => deliver(body).then((r) => r.status))),
      );
      expect(answers.every((status) => status === 200)).toBe(true);
    }

    const recorded = await recordedEvents("event_id = ANY ($1::text[])", [events.map((e) => e.eventId)]);
    expect(recorded).toHaveLength(EVENTS);
    const byOutcome = new Map<string, number>();
    for (const row of recorded) byOutcome.set(row.outcome, (byOutcome.get(row.outcome) ?? 0) + 1);
    expect(Object.fromEntries(byOutcome)).toEqual({ credited: EVENTS });
    expect(recorded.every((row) => row.deliveries === COPIES)).toBe(true);
    expect(await balanceOf(user.id)).toBe(events.reduce((sum, _e, i) => sum + 100 + i, 0));
    const credits = await testPool().query(
      "SELECT count(*)::int AS n FROM ledger_transitions WHERE user_id = $1 AND to_status = 'succeeded' AND actor = 'webhook'",
      [user.id],
    );
    expect(credits.rows[0]!.n).toBe(EVENTS);
    const wallet = await api("/api/v1/wallet", { token: user.token });
    expect(wallet.json.balance).toBe(await balanceOf(user.id));
  });
});
