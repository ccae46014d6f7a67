// The sandbox bank's payouts as a real process over real HTTP on 127.0.0.1 (docs/bank-sandbox.md "Payouts"), with a
// local webhook receiver standing in for the app and the app's payout client (lib/bank/payouts-client.ts).
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readPersistedState } from "@/bank/state";
import type { BankCallOptions } from "@/lib/bank/client";
import { payoutMerchantRefFor } from "@/lib/bank/merchant-ref";
import {
  createPayout,
  findPayoutByReference,
  getPayout,
  isSandboxAccountNumber,
  listPayoutsSince,
  payoutEventSchema,
  type BankPayout,
} from "@/lib/bank/payouts-client";
import { verifyWebhookSignature } from "@/lib/bank/signature";
import { randomWebhookSecret } from "@/scripts/lib/secrets";
import { startBank, type RunningBank } from "@/scripts/lib/stack";
import { waitFor } from "../helpers/wait";

const SECRET = randomWebhookSecret();
/** Upper bound for any wait on an event in this file. */
const WAIT_MS = 10_000;
/** The return switch's delay: well above settlement (30 ms), so `payout.paid` is sent well before the return. */
const RETURN_DELAY_MS = 300;
/** The slow switch's delay, and a client timeout well under it (and well over a local round trip). */
const SLOW_MS = 1500;
const SHORT_TIMEOUT_MS = 300;

interface Received {
  raw: Buffer;
  signature: string | null;
  event: { id: string; type: string; created: string; data: Record<string, unknown> };
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
    BANK_WEBHOOK_RETRY_BASE_MS: "80",
    BANK_WEBHOOK_RETRY_MAX_MS: "400",
    BANK_PAYOUT_RETURN_DELAY_MS: String(RETURN_DELAY_MS),
    BANK_SLOW_MS: String(SLOW_MS),
    BANK_SHUTDOWN_GRACE_MS: "500",
  };
}

/** A sandbox account number: `payload` (9 digits) and its Luhn check digit. */
function account(payload: string): string {
  for (let digit = 0; digit <= 9; digit++)
    if (isSandboxAccountNumber(`${payload}${digit}`)) return `${payload}${digit}`;
  throw new Error(`no check digit for ${payload}`);
}
const DESTINATION = account("123456789");

const payoutRef = (prefix = "") => payoutMerchantRefFor(user, `${prefix}p-${randomUUID().slice(0, 8)}`);

async function postPayout(merchantRef: string, body: Record<string, unknown>, key = merchantRef) {
  const res = await fetch(`${bank.url}/payouts`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ merchantRef, amount: 500, currency: "USD", destination: DESTINATION, ...body }),
  });
  return { status: res.status, replayed: res.headers.get("idempotent-replayed"), json: await res.json() };
}

/** A payout made through the client; throws when the bank did not answer with one. */
async function madePayout(merchantRef: string, amountMinor = 500): Promise<BankPayout> {
  const made = await createPayout({ merchantRef, amountMinor, currency: "USD", destination: DESTINATION }, options);
  if (made.kind !== "payout") throw new Error(`payout not made: ${JSON.stringify(made)}`);
  return made.payout;
}

const eventsOf = (payoutId: string) => received.filter((r) => r.event.data.payoutId === payoutId);

function waitForEvents(payoutId: string, count: number): Promise<Received[]> {
  return waitFor(
    () => eventsOf(payoutId),
    (all) => all.length >= count,
    { what: `${count} webhook(s) of payout ${payoutId}`, timeoutMs: WAIT_MS },
  );
}

function waitForStatus(payoutId: string, status: BankPayout["status"]): Promise<unknown> {
  return waitFor(
    () => getPayout(payoutId, options),
    (r) => r.kind === "found" && r.payout.status === status,
    { what: `payout ${payoutId} to be ${status}`, timeoutMs: WAIT_MS, intervalMs: 25 },
  );
}

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
  stateDir = await mkdtemp(join(tmpdir(), "bank-payouts-test-"));
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

describe("sandbox account numbers", () => {
  it("are 10 digits whose last is the Luhn check digit of the first 9", () => {
    expect(isSandboxAccountNumber("0000000000")).toBe(true);
    expect(isSandboxAccountNumber("1234567897")).toBe(true);
    expect(isSandboxAccountNumber("1234567890")).toBe(false);
    expect(isSandboxAccountNumber("123456789")).toBe(false);
    expect(isSandboxAccountNumber("12345678970")).toBe(false);
    expect(isSandboxAccountNumber("12345678a7")).toBe(false);
    expect(isSandboxAccountNumber(" 1234567897")).toBe(false);
    expect(isSandboxAccountNumber(1234567897 as unknown as string)).toBe(false);
  });
});

describe("sandbox bank: payouts", () => {
  it("makes one payout for 20 concurrent POSTs with one key, and replays it with Idempotent-Replayed", async () => {
    const merchantRef = payoutRef();
    const results = await Promise.all(Array.from({ length: 20 }, () => postPayout(merchantRef, {})));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200 && r.replayed === "true")).toHaveLength(19);
    expect(new Set(results.map((r) => r.json.id)).size).toBe(1);
    const id = results[0]?.json.id as string;
    expect(id).toMatch(/^po_/);
    expect(await findPayoutByReference(merchantRef, options)).toMatchObject({
      kind: "found",
      payout: { id, merchantRef, amount: 500, currency: "USD", destination: DESTINATION },
    });
    const persisted = await readPersistedState(stateFile);
    expect(persisted.payouts.filter((p) => p.merchantRef === merchantRef)).toHaveLength(1);
  });

  it("refuses the same key with another amount or destination: 422 idempotency_key_reused with the fields", async () => {
    const merchantRef = payoutRef();
    await madePayout(merchantRef);
    expect(await postPayout(merchantRef, { amount: 501 })).toMatchObject({
      status: 422,
      json: { error: { code: "idempotency_key_reused", fields: ["amount"] } },
    });
    expect(await postPayout(merchantRef, { currency: "EUR", destination: account("000000001") })).toMatchObject({
      status: 422,
      json: { error: { code: "idempotency_key_reused", fields: ["currency", "destination"] } },
    });
    expect(
      await createPayout({ merchantRef, amountMinor: 9, currency: "USD", destination: DESTINATION }, options),
    ).toEqual({ kind: "rejected", status: 422, code: "idempotency_key_reused" });
  });

  it("refuses a destination that is not a sandbox account number (422 invalid_destination) and makes nothing", async () => {
    for (const destination of ["1234567890", "123456789", "abcdefghij", ""]) {
      const merchantRef = payoutRef();
      expect(await createPayout({ merchantRef, amountMinor: 100, currency: "USD", destination }, options)).toEqual({
        kind: "rejected",
        status: 422,
        code: "invalid_destination",
      });
      expect(await findPayoutByReference(merchantRef, options)).toEqual({ kind: "not_found" });
    }
  });

  it("answers 400 for a key other than merchantRef or a bad amount, 415 for a non-JSON body, 413 for a huge one", async () => {
    const merchantRef = payoutRef();
    expect((await postPayout(merchantRef, {}, payoutRef())).status).toBe(400);
    expect((await postPayout(merchantRef, { amount: 0 })).status).toBe(400);
    expect((await postPayout(merchantRef, { extra: 1 })).status).toBe(400);
    const res = await fetch(`${bank.url}/payouts`, {
      method: "POST",
      headers: { "content-type": "text/plain", "idempotency-key": merchantRef },
      body: "{}",
    });
    expect(res.status).toBe(415);
    // Over the 64 KiB body limit (bank/server.ts BODY_LIMIT_BYTES).
    expect((await postPayout(merchantRef, { pad: "x".repeat(70_000) })).status).toBe(413);
    expect(await findPayoutByReference(merchantRef, options)).toEqual({ kind: "not_found" });
  });

  it("settles pending → paid and delivers a signed payout.paid; GET /payouts/{id} tells the same", async () => {
    const merchantRef = payoutRef();
    const payout = await madePayout(merchantRef, 700);
    expect(payout.status).toBe("pending");
    const [event] = await waitForEvents(payout.id, 1);
    expect(event?.event).toMatchObject({
      type: "payout.paid",
      data: { payoutId: payout.id, merchantRef, amount: 700, currency: "USD", status: "paid" },
    });
    expect(payoutEventSchema.safeParse(event?.event).success).toBe(true);
    const verified = verifyWebhookSignature({
      rawBody: event?.raw as Buffer,
      header: event?.signature ?? null,
      secrets: [SECRET],
      nowSeconds: Math.floor(Date.now() / 1000),
    });
    expect(verified.ok).toBe(true);
    const found = await getPayout(payout.id, options);
    expect(found).toMatchObject({
      kind: "found",
      payout: { id: payout.id, status: "paid", settledAt: expect.any(String) },
    });
    expect(await getPayout("po_unknown", options)).toEqual({ kind: "not_found" });
  });

  it("fails a payout with sbx-po-fail-: payout.failed with its reason", async () => {
    const payout = await madePayout(payoutRef("sbx-po-fail-"));
    const [event] = await waitForEvents(payout.id, 1);
    expect(event?.event).toMatchObject({
      type: "payout.failed",
      data: { status: "failed", failureReason: "insufficient_funds_at_bank" },
    });
    expect(payoutEventSchema.safeParse(event?.event).success).toBe(true);
    expect(await getPayout(payout.id, options)).toMatchObject({
      kind: "found",
      payout: { status: "failed", failureReason: "insufficient_funds_at_bank" },
    });
  });

  it("returns a payout with sbx-po-return-: paid first, then payout.returned with its return id", async () => {
    const payout = await madePayout(payoutRef("sbx-po-return-"));
    const events = await waitForEvents(payout.id, 2);
    expect(events.map((r) => r.event.type)).toEqual(["payout.paid", "payout.returned"]);
    const returned = events[1]?.event;
    expect(returned?.data).toMatchObject({ status: "returned", returnId: expect.stringMatching(/^pr_/) });
    expect(payoutEventSchema.safeParse(returned).success).toBe(true);
    const found = await getPayout(payout.id, options);
    if (found.kind !== "found") throw new Error("payout not found");
    expect(found.payout).toMatchObject({
      status: "returned",
      returnId: returned?.data.returnId,
      returnReason: "account_closed",
    });
    // Returned at least the return delay after it was paid.
    const paidMs = Date.parse(found.payout.settledAt as string);
    expect(Date.parse(found.payout.returnedAt as string) - paidMs).toBeGreaterThanOrEqual(RETURN_DELAY_MS);
  });

  it("with sbx-po-lost-, the payout is made but the reply is lost: unknown, then found by its reference", async () => {
    const merchantRef = payoutRef("sbx-po-lost-");
    const made = await createPayout(
      { merchantRef, amountMinor: 300, currency: "USD", destination: DESTINATION },
      options,
    );
    expect(made).toMatchObject({ kind: "unknown", reason: "network" });
    const found = await findPayoutByReference(merchantRef, options);
    expect(found).toMatchObject({ kind: "found", payout: { merchantRef, amount: 300 } });
    // A repeat is answered at once with the same payout.
    const again = await createPayout(
      { merchantRef, amountMinor: 300, currency: "USD", destination: DESTINATION },
      options,
    );
    expect(again).toMatchObject({ kind: "payout", replayed: true });
    if (found.kind === "found" && again.kind === "payout") expect(again.payout.id).toBe(found.payout.id);
  });

  it("with sbx-po-slow-, the reply comes after the client's timeout: unknown, the payout exists", async () => {
    const merchantRef = payoutRef("sbx-po-slow-");
    const made = await createPayout(
      { merchantRef, amountMinor: 300, currency: "USD", destination: DESTINATION },
      { ...options, timeoutMs: SHORT_TIMEOUT_MS },
    );
    expect(made).toMatchObject({ kind: "unknown", reason: "timeout" });
    expect(await findPayoutByReference(merchantRef, options)).toMatchObject({ kind: "found", payout: { merchantRef } });
  });

  it("with sbx-po-5xx-, the bank answers 503 and makes nothing, however often asked", async () => {
    const merchantRef = payoutRef("sbx-po-5xx-");
    for (let i = 0; i < 2; i++) {
      const made = await createPayout(
        { merchantRef, amountMinor: 300, currency: "USD", destination: DESTINATION },
        options,
      );
      expect(made).toMatchObject({ kind: "unknown", reason: "server_error", detail: "HTTP 503" });
    }
    expect(await findPayoutByReference(merchantRef, options)).toEqual({ kind: "not_found" });
  });

  it("with sbx-po-dup-, each event is delivered twice: one event id, the same bytes", async () => {
    const payout = await madePayout(payoutRef("sbx-po-dup-"));
    const events = await waitForEvents(payout.id, 2);
    expect(events).toHaveLength(2);
    expect(events[0]?.event.id).toBe(events[1]?.event.id);
    expect(events[0]?.raw.equals(events[1]?.raw as Buffer)).toBe(true);
    expect(events[0]?.event.type).toBe("payout.paid");
  });

  it("with sbx-po-reorder-, the payout is paid then returned, and payout.returned arrives before payout.paid", async () => {
    const payout = await madePayout(payoutRef("sbx-po-reorder-"));
    const events = await waitForEvents(payout.id, 2);
    expect(events.map((r) => r.event.type)).toEqual(["payout.returned", "payout.paid"]);
    // The late `payout.paid` is the old event: dated when the payout was paid, before the return.
    const [returned, paid] = events.map((r) => r.event);
    expect(Date.parse(paid?.created as string)).toBeLessThan(Date.parse(returned?.created as string));
    expect(paid?.data.status).toBe("paid");
    expect(await getPayout(payout.id, options)).toMatchObject({ kind: "found", payout: { status: "returned" } });
  });

  it("with sbx-po-nohook-, no webhook is sent: only GET tells that the payout was paid", async () => {
    const merchantRef = payoutRef("sbx-po-nohook-");
    const payout = await madePayout(merchantRef);
    await waitForStatus(payout.id, "paid");
    const deliveries = await (await fetch(`${bank.url}/_sandbox/deliveries?merchantRef=${merchantRef}`)).json();
    expect(deliveries.deliveries).toEqual([]);
    expect(eventsOf(payout.id)).toEqual([]);
  });

  it("applies the payout fault rates of POST /_sandbox/faults to payouts made from then on", async () => {
    const set = await fetch(`${bank.url}/_sandbox/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ payouts: { fail: 1 } }),
    });
    expect(await set.json()).toMatchObject({ payoutRates: { fail: 1, slow: 0 }, rates: { decline: 0 } });
    try {
      const payout = await madePayout(payoutRef());
      await waitForStatus(payout.id, "failed");
    } finally {
      await fetch(`${bank.url}/_sandbox/faults`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ payouts: { fail: 0 } }),
      });
    }
  });

  it("lists payouts made or changed since an instant, page by page, each once as it is now", async () => {
    const since = new Date().toISOString();
    const made = [await madePayout(payoutRef()), await madePayout(payoutRef()), await madePayout(payoutRef())];
    for (const p of made) await waitForStatus(p.id, "paid");
    const seen: BankPayout[] = [];
    let cursor = since;
    for (let page = 0; page < 20; page++) {
      const listed = await listPayoutsSince(cursor, { ...options, limit: 1 });
      if (listed.kind !== "page") throw new Error(`no page: ${JSON.stringify(listed)}`);
      seen.push(...listed.payouts);
      cursor = listed.nextCursor;
      if (!listed.hasMore) break;
    }
    const ours = seen.filter((p) => made.some((m) => m.id === p.id));
    expect(ours.map((p) => p.id).sort()).toEqual(made.map((p) => p.id).sort());
    expect(ours.every((p) => p.status === "paid")).toBe(true);
    expect(new Set(seen.map((p) => p.id)).size).toBe(seen.length);
    // Nothing changed since the last cursor: an empty page that keeps the cursor.
    expect(await listPayoutsSince(cursor, options)).toEqual({
      kind: "page",
      payouts: [],
      hasMore: false,
      nextCursor: cursor,
    });
    expect(await listPayoutsSince("yesterday", options)).toMatchObject({ kind: "rejected", status: 400 });
  });

  it("keeps acknowledged payouts across a crash (journal), and settles a pending one after the restart", async () => {
    const merchantRef = payoutRef();
    await fetch(`${bank.url}/_sandbox/webhooks/pause`, { method: "POST" });
    const payout = await madePayout(merchantRef, 400);
    const persisted = await readPersistedState(stateFile);
    expect(persisted.payouts.find((p) => p.id === payout.id)).toMatchObject({ merchantRef, amount: 400 });
    await bank.kill();
    bank = await startBank({ env: bankEnv() });
    options = { bankUrl: bank.url, timeoutMs: 5000 };
    const replay = await createPayout(
      { merchantRef, amountMinor: 400, currency: "USD", destination: DESTINATION },
      options,
    );
    expect(replay).toMatchObject({ kind: "payout", replayed: true, payout: { id: payout.id } });
    const [event] = await waitForEvents(payout.id, 1);
    expect(event?.event.type).toBe("payout.paid");
    expect(await getPayout(payout.id, options)).toMatchObject({ kind: "found", payout: { status: "paid" } });
  });
});
