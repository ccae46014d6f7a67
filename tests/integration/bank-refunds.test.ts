// The sandbox bank's refunds as a real process over real HTTP on 127.0.0.1 (docs/bank-sandbox.md "Refunds"), with a
// local webhook receiver standing in for the app and the app's refund client (lib/bank/refunds-client.ts).
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readPersistedState } from "@/bank/state";
import { createCharge, type BankCallOptions } from "@/lib/bank/client";
import { merchantRefFor } from "@/lib/bank/merchant-ref";
import { createRefund, getRefund } from "@/lib/bank/refunds-client";
import { verifyWebhookSignature } from "@/lib/bank/signature";
import { randomWebhookSecret } from "@/scripts/lib/secrets";
import { startBank, type RunningBank } from "@/scripts/lib/stack";
import { waitFor } from "../helpers/wait";

const SECRET = randomWebhookSecret();
/** Upper bound for any wait on an event in this file. */
const WAIT_MS = 10_000;

interface Received {
  raw: Buffer;
  signature: string | null;
  event: { id: string; type: string; data: Record<string, unknown> };
}
const received: Received[] = [];
let receiver: Server;
let receiverUrl = "";
let stateDir = "";
let stateFile = "";
let bank: RunningBank;
let options: BankCallOptions;
const user = `u${randomUUID().replaceAll("-", "").slice(0, 12)}`;

function bankEnv(): Record<string, string> {
  return {
    APP_URL: receiverUrl,
    BANK_STATE_FILE: stateFile,
    BANK_WEBHOOK_SECRETS: SECRET,
    BANK_WEBHOOK_DELAY_MS: "30",
    BANK_SYNC_SUCCESS: "1",
    BANK_SHUTDOWN_GRACE_MS: "500",
  };
}

/** A succeeded charge of `amountMinor` for a fresh top-up reference. */
async function succeededCharge(amountMinor: number, prefix = ""): Promise<string> {
  const merchantRef = merchantRefFor(user, `${prefix}t-${randomUUID().slice(0, 8)}`);
  const charged = await createCharge({ merchantRef, amountMinor, currency: "USD" }, options);
  if (charged.kind !== "charge") throw new Error(`charge not made: ${JSON.stringify(charged)}`);
  return charged.charge.id;
}

const refundRef = (prefix = "") => `refund:${user}:${prefix}r-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  receiver = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const raw = Buffer.concat(chunks);
    received.push({
      raw,
      signature: (req.headers["bank-signature"] as string | undefined) ?? null,
      event: JSON.parse(raw.toString("utf8")),
    });
    res.writeHead(200).end("{}");
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  stateDir = await mkdtemp(join(tmpdir(), "bank-refunds-test-"));
  stateFile = join(stateDir, "bank-state.json");
  bank = await startBank({ env: bankEnv() });
  options = { bankUrl: bank.url, timeoutMs: 5000 };
});

afterAll(async () => {
  await bank?.stop();
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

describe("sandbox bank: refunds", () => {
  it("makes one refund for 20 concurrent POSTs with one key, and replays it with Idempotent-Replayed", async () => {
    const chargeId = await succeededCharge(1000);
    const merchantRef = refundRef();
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${bank.url}/refunds`, {
          method: "POST",
          headers: { "content-type": "application/json", "idempotency-key": merchantRef },
          body: JSON.stringify({ chargeId, amount: 400 }),
        }).then(async (r) => ({
          status: r.status,
          replayed: r.headers.get("idempotent-replayed"),
          body: await r.json(),
        })),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200 && r.replayed === "true")).toHaveLength(19);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    const list = await (await fetch(`${bank.url}/refunds?chargeId=${chargeId}`)).json();
    expect(list.refunds).toHaveLength(1);
    expect(list.refunds[0]).toMatchObject({ merchantRef, chargeId, amount: 400, currency: "USD" });
  });

  it("refuses the same key with another amount or charge: 422 idempotency_key_reused with the fields", async () => {
    const chargeId = await succeededCharge(1000);
    const merchantRef = refundRef();
    expect((await createRefund({ merchantRef, chargeId, amountMinor: 100 }, options)).kind).toBe("refund");
    const res = await fetch(`${bank.url}/refunds`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": merchantRef },
      body: JSON.stringify({ chargeId, amount: 101 }),
    });
    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({
      error: { code: "idempotency_key_reused", message: expect.any(String), fields: ["amount"] },
    });
  });

  it("allows partial refunds up to the charge's amount and refuses the one past it (422 refund_exceeds_charge)", async () => {
    const chargeId = await succeededCharge(1000);
    expect((await createRefund({ merchantRef: refundRef(), chargeId, amountMinor: 600 }, options)).kind).toBe("refund");
    expect((await createRefund({ merchantRef: refundRef(), chargeId, amountMinor: 400 }, options)).kind).toBe("refund");
    const third = await createRefund({ merchantRef: refundRef(), chargeId, amountMinor: 1 }, options);
    expect(third).toEqual({ kind: "rejected", status: 422, code: "refund_exceeds_charge" });
  });

  it("refuses an unknown charge (404) and a declined one (409 charge_not_refundable)", async () => {
    expect(await createRefund({ merchantRef: refundRef(), chargeId: "ch_nope", amountMinor: 1 }, options)).toEqual({
      kind: "rejected",
      status: 404,
      code: "charge_not_found",
    });
    const declinedRef = merchantRefFor(user, `sbx-decline-${randomUUID().slice(0, 8)}`);
    const declined = await createCharge({ merchantRef: declinedRef, amountMinor: 500, currency: "USD" }, options);
    if (declined.kind !== "charge") throw new Error("charge not made");
    expect(
      await createRefund({ merchantRef: refundRef(), chargeId: declined.charge.id, amountMinor: 1 }, options),
    ).toEqual({ kind: "rejected", status: 409, code: "charge_not_refundable" });
  });

  it("settles a refund as succeeded and delivers a signed refund.succeeded; GET /refunds/{id} tells the same", async () => {
    const chargeId = await succeededCharge(700);
    const merchantRef = refundRef();
    const made = await createRefund({ merchantRef, chargeId, amountMinor: 700 }, options);
    if (made.kind !== "refund") throw new Error("refund not made");
    expect(made.refund.status).toBe("pending");
    const event = await waitFor(
      () => received.find((r) => r.event.data.refundId === made.refund.id),
      (r) => r !== undefined,
      { what: `the webhook of refund ${made.refund.id}`, timeoutMs: WAIT_MS },
    );
    expect(event?.event).toMatchObject({
      type: "refund.succeeded",
      data: { refundId: made.refund.id, chargeId, merchantRef, amount: 700, currency: "USD" },
    });
    const verified = verifyWebhookSignature({
      rawBody: event?.raw as Buffer,
      header: event?.signature ?? null,
      secrets: [SECRET],
      nowSeconds: Math.floor(Date.now() / 1000),
    });
    expect(verified.ok).toBe(true);
    expect(await getRefund(made.refund.id, options)).toEqual({
      kind: "found",
      refund: { ...made.refund, status: "succeeded" },
    });
    expect(await getRefund("re_unknown", options)).toEqual({ kind: "not_found" });
  });

  it("fails a refund whose refund id starts with sbx-refund-fail-: refund.failed, and its amount is refundable again", async () => {
    const chargeId = await succeededCharge(500);
    const made = await createRefund(
      { merchantRef: refundRef("sbx-refund-fail-"), chargeId, amountMinor: 500 },
      options,
    );
    if (made.kind !== "refund") throw new Error("refund not made");
    const event = await waitFor(
      () => received.find((r) => r.event.data.refundId === made.refund.id),
      (r) => r !== undefined,
      { what: `the webhook of refund ${made.refund.id}`, timeoutMs: WAIT_MS },
    );
    expect(event?.event.type).toBe("refund.failed");
    expect(await getRefund(made.refund.id, options)).toMatchObject({ kind: "found", refund: { status: "failed" } });
    // A failed refund gives nothing back, so the whole charge is refundable again.
    expect((await createRefund({ merchantRef: refundRef(), chargeId, amountMinor: 500 }, options)).kind).toBe("refund");
  });

  it("keeps acknowledged refunds across a crash (journal), and settles a pending one after the restart", async () => {
    const chargeId = await succeededCharge(300);
    const merchantRef = refundRef();
    await fetch(`${bank.url}/_sandbox/webhooks/pause`, { method: "POST" });
    const made = await createRefund({ merchantRef, chargeId, amountMinor: 300 }, options);
    if (made.kind !== "refund") throw new Error("refund not made");
    const persisted = await readPersistedState(stateFile);
    expect(persisted.refunds.find((r) => r.id === made.refund.id)).toMatchObject({ merchantRef, amount: 300 });
    await bank.kill();
    bank = await startBank({ env: bankEnv() });
    options = { bankUrl: bank.url, timeoutMs: 5000 };
    const replay = await createRefund({ merchantRef, chargeId, amountMinor: 300 }, options);
    expect(replay).toMatchObject({ kind: "refund", replayed: true, refund: { id: made.refund.id } });
    await waitFor(
      () => received.filter((r) => r.event.data.refundId === made.refund.id),
      (all) => all.length === 1,
      { what: `one webhook of refund ${made.refund.id} after the restart`, timeoutMs: WAIT_MS },
    );
    expect((await getRefund(made.refund.id, options)).kind).toBe("found");
  });
});
