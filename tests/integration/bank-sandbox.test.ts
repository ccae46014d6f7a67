// The sandbox bank as a real process over real HTTP on 127.0.0.1 (contract section 5; docs/bank-sandbox.md),
// with a local webhook receiver standing in for the app, and the app's client (lib/bank/client.ts) against it.
// Every process and server started here is stopped in afterAll; every wait is bounded.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startBank, type RunningBank } from "@/scripts/lib/stack";
import { readPersistedState } from "@/bank/state";
import { retryDelayMs } from "@/bank/faults";
import { cancelCharge, createCharge, getCharge, listChargesSince, type BankCallOptions } from "@/lib/bank/client";
import { merchantRefFor } from "@/lib/bank/merchant-ref";
import { verifyWebhookSignature } from "@/lib/bank/signature";
import { randomWebhookSecret } from "@/scripts/lib/secrets";
import { waitFor } from "../helpers/wait";

// ---------------------------------------------------------------------------------------------------------------
// Fast schedule for tests. Each number is small enough to keep the file under ~30 s and large enough to be
// measurable on a busy 2-core machine.
const WEBHOOK_DELAY_MS = 30;
const RETRY_BASE_MS = 80;
const RETRY_MAX_MS = 400;
const MAX_ATTEMPTS = 4;
/** One attempt's budget; the timeout test holds a request longer than this. */
const ATTEMPT_TIMEOUT_MS = 700;
/** The slow switch's delay: long enough to beat the short client timeout below by a wide margin. */
const SLOW_MS = 1500;
/** The "short client timeout" for the slow switch: well under SLOW_MS, well over a normal local round trip. */
const SHORT_TIMEOUT_MS = 300;
/** Upper bound for any single wait on an event in this file. */
const WAIT_MS = 10_000;
/** Fresh secrets of this run (case C16: at least 32 bytes, never a published value). */
const NEW_SECRET = randomWebhookSecret();
const OLD_SECRET = randomWebhookSecret();
// ---------------------------------------------------------------------------------------------------------------

interface ReceivedWebhook {
  at: number;
  rawBody: Buffer;
  signature: string | null;
  attemptHeader: string | null;
  event: {
    id: string;
    type: string;
    created: string;
    data: { chargeId: string; merchantRef: string; amount: number; currency: string };
  };
}

/**
 * The stand-in for the app's webhook endpoint. Answers per merchant reference from a planned list of statuses
 * (then 200), or holds a request for `holdMs` first. Waiters are woken on each arrival, so tests wait on events,
 * not on sleeps.
 */
class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private readonly plans = new Map<string, Array<{ status: number; holdMs?: number }>>();
  private readonly waiters = new Set<() => void>();
  private readonly held = new Set<ServerResponse>();
  private server!: Server;
  url = "";

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Planned answers for one merchant reference, in order; after the list runs out, 200. */
  plan(merchantRef: string, answers: Array<number | { status: number; holdMs?: number }>): void {
    this.plans.set(
      merchantRef,
      answers.map((a) => (typeof a === "number" ? { status: a } : a)),
    );
  }

  for(merchantRef: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.event.data.merchantRef === merchantRef);
  }

  /** Resolves once `predicate` holds over the received webhooks; rejects after `timeoutMs`. */
  waitFor(predicate: (all: ReceivedWebhook[]) => boolean, timeoutMs = WAIT_MS): Promise<void> {
    if (predicate(this.received)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!predicate(this.received)) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`webhook condition not met within ${timeoutMs} ms; received ${this.received.length}`));
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const rawBody = Buffer.concat(chunks);
    const event = JSON.parse(rawBody.toString("utf8")) as ReceivedWebhook["event"];
    const answer = this.plans.get(event.data.merchantRef)?.shift() ?? { status: 200 };
    this.received.push({
      at: performance.now(),
      rawBody,
      signature: (req.headers["bank-signature"] as string | undefined) ?? null,
      attemptHeader: (req.headers["bank-delivery-attempt"] as string | undefined) ?? null,
      event,
    });
    for (const waiter of [...this.waiters]) waiter();
    const reply = () => {
      this.held.delete(res);
      res.writeHead(answer.status, { "content-type": "application/json" });
      res.end(JSON.stringify({ received: answer.status < 300 }));
    };
    if (answer.holdMs) {
      this.held.add(res);
      setTimeout(reply, answer.holdMs);
    } else {
      reply();
    }
  }
}

/** Polls `read` until `accept` holds (for bank state, which has no push channel); bounded by `timeoutMs`. */
function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = WAIT_MS): Promise<T> {
  // 25 ms between reads of a local service: cheap, and far below every duration asserted here.
  return waitFor(read, accept, { what: "the bank's state", timeoutMs, intervalMs: 25 });
}

interface DeliveryView {
  id: string;
  eventId: string;
  type: string;
  after: string | null;
  copy: number;
  status: "pending" | "delivered" | "failed";
  attempts: Array<{ attempt: number; status?: number; error?: string; startedAt: string }>;
}

async function deliveriesFor(bankUrl: string, merchantRef: string): Promise<DeliveryView[]> {
  const res = await fetch(`${bankUrl}/_sandbox/deliveries?${new URLSearchParams({ merchantRef })}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { deliveries: DeliveryView[] }).deliveries;
}

async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, unknown> };
}

const user = `u${randomUUID().replaceAll("-", "").slice(0, 12)}`;
let counter = 0;
/** A fresh merchant reference per test, with an optional sandbox prefix on the ref id. */
function ref(prefix = ""): string {
  counter += 1;
  return merchantRefFor(user, `${prefix}t${counter}-${randomUUID().slice(0, 8)}`);
}

const receiver = new WebhookReceiver();
let stateDir = "";
let mainStateFile = "";
let bank: RunningBank;
let options: BankCallOptions;

function bankEnv(stateFile: string): Record<string, string> {
  return {
    APP_URL: receiver.url,
    BANK_STATE_FILE: stateFile,
    // Rotation: the bank signs with both; the app may know either.
    BANK_WEBHOOK_SECRETS: `${NEW_SECRET},${OLD_SECRET}`,
    BANK_WEBHOOK_DELAY_MS: String(WEBHOOK_DELAY_MS),
    BANK_WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS),
    BANK_WEBHOOK_RETRY_MAX_MS: String(RETRY_MAX_MS),
    BANK_WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    BANK_WEBHOOK_TIMEOUT_MS: String(ATTEMPT_TIMEOUT_MS),
    BANK_SLOW_MS: String(SLOW_MS),
    BANK_SHUTDOWN_GRACE_MS: "500",
  };
}

beforeAll(async () => {
  await receiver.start();
  stateDir = await mkdtemp(join(tmpdir(), "bank-sandbox-test-"));
  mainStateFile = join(stateDir, "main", "bank-state.json");
  bank = await startBank({ env: bankEnv(mainStateFile) });
  options = { bankUrl: bank.url, timeoutMs: 5000 };
});

afterAll(async () => {
  await bank?.stop();
  await receiver.stop();
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

describe("sandbox bank: charges", () => {
  it("answers /health", async () => {
    const res = await fetch(`${bank.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: "ok", webhooksPaused: false });
  });

  it("makes one charge for 20 concurrent POSTs with one key (one 201, nineteen 200 replays)", async () => {
    const merchantRef = ref();
    const body = { merchantRef, amount: 1234, currency: "USD" };
    // All 20 requests are built and sent in one synchronous loop: they are in flight together.
    const results = await Promise.all(
      Array.from({ length: 20 }, () => postJson(`${bank.url}/charges`, body, { "idempotency-key": merchantRef })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    const ids = new Set(results.map((r) => r.json.id));
    expect(ids.size).toBe(1);
    for (const r of results.filter((x) => x.status === 200)) expect(r.headers.get("idempotent-replayed")).toBe("true");

    const page = await listChargesSince(new Date(Date.now() - 60_000).toISOString(), { ...options, limit: 1000 });
    expect(page.kind).toBe("page");
    if (page.kind !== "page") return;
    expect(page.charges.filter((c) => c.merchantRef === merchantRef)).toHaveLength(1);

    // And exactly one webhook event for it.
    await receiver.waitFor(() => receiver.for(merchantRef).length >= 1);
    const deliveries = await deliveriesFor(bank.url, merchantRef);
    expect(deliveries).toHaveLength(1);
  });

  it("refuses the same key with other parameters: 422 idempotency_key_reused listing the fields", async () => {
    const merchantRef = ref();
    const first = await createCharge({ merchantRef, amountMinor: 500, currency: "USD" }, options);
    expect(first).toMatchObject({ kind: "charge", replayed: false });
    const other = await postJson(
      `${bank.url}/charges`,
      { merchantRef, amount: 501, currency: "EUR" },
      { "idempotency-key": merchantRef },
    );
    expect(other.status).toBe(422);
    expect(other.json).toEqual({
      error: expect.objectContaining({ code: "idempotency_key_reused", fields: ["amount", "currency"] }),
    });
    expect(await createCharge({ merchantRef, amountMinor: 501, currency: "USD" }, options)).toEqual({
      kind: "rejected",
      status: 422,
      code: "idempotency_key_reused",
    });
    // The original charge is untouched and a faithful repeat still gets it.
    const again = await createCharge({ merchantRef, amountMinor: 500, currency: "USD" }, options);
    expect(again).toMatchObject({ kind: "charge", replayed: true });
    if (first.kind === "charge" && again.kind === "charge") expect(again.charge.id).toBe(first.charge.id);
  });

  it("validates requests: key must equal merchantRef, integer amounts, JSON bodies", async () => {
    const merchantRef = ref();
    const cases: Array<[Record<string, string>, unknown, number]> = [
      [{}, { merchantRef, amount: 1, currency: "USD" }, 400],
      [{ "idempotency-key": ref() }, { merchantRef, amount: 1, currency: "USD" }, 400],
      [{ "idempotency-key": merchantRef }, { merchantRef, amount: 1.5, currency: "USD" }, 400],
      [{ "idempotency-key": merchantRef }, { merchantRef, amount: 0, currency: "USD" }, 400],
      [{ "idempotency-key": merchantRef }, { merchantRef, amount: "100", currency: "USD" }, 400],
      [{ "idempotency-key": merchantRef }, { merchantRef, amount: 1, currency: "usd" }, 400],
      [{ "idempotency-key": merchantRef }, { merchantRef, amount: 1, currency: "USD", extra: 1 }, 400],
    ];
    for (const [headers, body, status] of cases) {
      const res = await postJson(`${bank.url}/charges`, body, headers);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.json).toEqual({ error: expect.objectContaining({ code: "invalid_request" }) });
    }
    const textBody = await fetch(`${bank.url}/charges`, {
      method: "POST",
      headers: { "content-type": "text/plain", "idempotency-key": merchantRef },
      body: "{}",
    });
    expect(textBody.status).toBe(415);
    // None of these made a charge.
    expect(await getCharge(merchantRef, options)).toEqual({ kind: "not_found" });
  });

  it("normal charge: pending at once, then a signed charge.succeeded webhook over the exact bytes", async () => {
    const merchantRef = ref();
    const result = await createCharge({ merchantRef, amountMinor: 2500, currency: "USD" }, options);
    expect(result).toMatchObject({
      kind: "charge",
      replayed: false,
      charge: { status: "pending", merchantRef, amount: 2500, currency: "USD" },
    });
    if (result.kind !== "charge") return;

    await receiver.waitFor(() => receiver.for(merchantRef).length >= 1);
    const [hook] = receiver.for(merchantRef);
    expect(hook!.event).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: "charge.succeeded",
      created: expect.any(String),
      data: { chargeId: result.charge.id, merchantRef, amount: 2500, currency: "USD" },
    });
    const nowSeconds = Math.floor(Date.now() / 1000);
    for (const secrets of [[NEW_SECRET], [OLD_SECRET], ["whsec_unrelated", OLD_SECRET]]) {
      expect(verifyWebhookSignature({ rawBody: hook!.rawBody, header: hook!.signature, secrets, nowSeconds })).toEqual({
        ok: true,
      });
    }
    expect(
      verifyWebhookSignature({
        rawBody: hook!.rawBody,
        header: hook!.signature,
        secrets: ["whsec_unrelated"],
        nowSeconds,
      }),
    ).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(hook!.signature!.match(/v1=/g)).toHaveLength(2);

    expect(await getCharge(merchantRef, options)).toMatchObject({
      kind: "found",
      charge: { id: result.charge.id, status: "succeeded" },
    });
  });

  it("sbx-decline-: declined at once, then a charge.failed webhook", async () => {
    const merchantRef = ref("sbx-decline-");
    const result = await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options);
    expect(result).toMatchObject({ kind: "charge", charge: { status: "declined" } });
    await receiver.waitFor(() => receiver.for(merchantRef).length >= 1);
    expect(receiver.for(merchantRef).map((h) => h.event.type)).toEqual(["charge.failed"]);
    expect(await getCharge(merchantRef, options)).toMatchObject({ kind: "found", charge: { status: "declined" } });
  });

  it("sbx-slow-: a short client timeout is an unknown outcome, yet the charge exists; a patient client gets 201 after BANK_SLOW_MS", async () => {
    const merchantRef = ref("sbx-slow-");
    const started = performance.now();
    const result = await createCharge(
      { merchantRef, amountMinor: 100, currency: "USD" },
      { ...options, timeoutMs: SHORT_TIMEOUT_MS },
    );
    expect(result).toEqual({ kind: "unknown", reason: "timeout" });
    expect(performance.now() - started).toBeLessThan(SLOW_MS);
    // The caller must not guess: the charge was made.
    expect(await getCharge(merchantRef, options)).toMatchObject({ kind: "found", charge: { merchantRef } });
    // A repeat is answered without the slow delay, with the same charge (the slow reply was a one-off network event).
    const repeatStarted = performance.now();
    expect(await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options)).toMatchObject({
      kind: "charge",
      replayed: true,
    });
    expect(performance.now() - repeatStarted).toBeLessThan(SLOW_MS);

    const patientRef = ref("sbx-slow-");
    const patientStarted = performance.now();
    const patient = await createCharge({ merchantRef: patientRef, amountMinor: 100, currency: "USD" }, options);
    expect(patient).toMatchObject({ kind: "charge", replayed: false });
    expect(performance.now() - patientStarted).toBeGreaterThanOrEqual(SLOW_MS - 50);
  });

  it("sbx-lost-: the reply is dropped (unknown/network), the charge exists, and a repeat returns it", async () => {
    const merchantRef = ref("sbx-lost-");
    const result = await createCharge({ merchantRef, amountMinor: 700, currency: "USD" }, options);
    expect(result).toMatchObject({ kind: "unknown", reason: "network" });
    const found = await getCharge(merchantRef, options);
    expect(found).toMatchObject({ kind: "found", charge: { merchantRef, amount: 700 } });
    const repeat = await createCharge({ merchantRef, amountMinor: 700, currency: "USD" }, options);
    expect(repeat).toMatchObject({ kind: "charge", replayed: true });
    if (repeat.kind === "charge" && found.kind === "found") expect(repeat.charge.id).toBe(found.charge.id);
    // The webhook still tells the app.
    await receiver.waitFor(() => receiver.for(merchantRef).length >= 1);
  });

  it("sbx-dup-: each webhook arrives 3 times with the same event id and identical bytes", async () => {
    const merchantRef = ref("sbx-dup-");
    await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options);
    await receiver.waitFor(() => receiver.for(merchantRef).length >= 3);
    const hooks = receiver.for(merchantRef);
    expect(new Set(hooks.map((h) => h.event.id)).size).toBe(1);
    expect(new Set(hooks.map((h) => h.rawBody.toString("base64"))).size).toBe(1);
    const deliveries = await eventually(
      () => deliveriesFor(bank.url, merchantRef),
      (ds) => ds.length === 3 && ds.every((d) => d.status === "delivered"),
    );
    expect(deliveries.map((d) => d.copy).sort()).toEqual([1, 2, 3]);
    expect(receiver.for(merchantRef)).toHaveLength(3);
  });

  it("sbx-reorder-: a stale charge.failed goes first, and the success is held back until it has been answered", async () => {
    const merchantRef = ref("sbx-reorder-");
    // The failure's first attempt is refused: the success must wait for its retry, not for its first attempt.
    receiver.plan(merchantRef, [503]);
    const result = await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options);
    await receiver.waitFor(() => receiver.for(merchantRef).length >= 3);
    const [stale, staleRetry, success] = receiver.for(merchantRef);
    expect([stale!.event.type, staleRetry!.event.type, success!.event.type]).toEqual([
      "charge.failed",
      "charge.failed",
      "charge.succeeded",
    ]);
    expect(staleRetry!.event.id).toBe(stale!.event.id);
    expect(success!.event.id).not.toBe(stale!.event.id);
    expect(stale!.event.data).toEqual(success!.event.data);
    // "Stale": dated at the charge's creation, before the success.
    if (result.kind === "charge") expect(stale!.event.created).toBe(result.charge.createdAt);
    expect(Date.parse(stale!.event.created)).toBeLessThanOrEqual(Date.parse(success!.event.created));
    expect(success!.at).toBeGreaterThanOrEqual(staleRetry!.at);
    const deliveries = await deliveriesFor(bank.url, merchantRef);
    expect(deliveries.find((d) => d.type === "charge.succeeded")?.after).toBe(stale!.event.id);
    // The bank's truth is unchanged by the stale event.
    expect(await getCharge(merchantRef, options)).toMatchObject({ kind: "found", charge: { status: "succeeded" } });
  });

  it("sbx-nohook-: the charge settles but no webhook is ever queued", async () => {
    const merchantRef = ref("sbx-nohook-");
    await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options);
    // Settlement and queueing happen in the same step: once it reads succeeded, any webhook would be queued.
    await eventually(
      () => getCharge(merchantRef, options),
      (r) => r.kind === "found" && r.charge.status === "succeeded",
    );
    expect(await deliveriesFor(bank.url, merchantRef)).toEqual([]);
    expect(receiver.for(merchantRef)).toEqual([]);
  });
});

describe("sandbox bank: webhook delivery", () => {
  it("retries with growing back-off until a 2xx, sending the same bytes each time", async () => {
    const merchantRef = ref();
    receiver.plan(merchantRef, [500, 503, 200]);
    await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options);
    await receiver.waitFor(() => receiver.for(merchantRef).length >= 3);
    const hooks = receiver.for(merchantRef);
    expect(hooks.map((h) => h.attemptHeader)).toEqual(["1", "2", "3"]);
    expect(new Set(hooks.map((h) => h.rawBody.toString("base64"))).size).toBe(1);
    // Equal jitter: the wait after attempt n is at least half of min(max, base * 2^(n-1)).
    expect(hooks[1]!.at - hooks[0]!.at).toBeGreaterThanOrEqual(RETRY_BASE_MS / 2 - 5);
    expect(hooks[2]!.at - hooks[1]!.at).toBeGreaterThanOrEqual(RETRY_BASE_MS - 5);
    const [delivery] = await eventually(
      () => deliveriesFor(bank.url, merchantRef),
      (ds) => ds[0]?.status === "delivered",
    );
    expect(delivery!.attempts.map((a) => a.status)).toEqual([500, 503, 200]);
  });

  it("gives up after BANK_WEBHOOK_MAX_ATTEMPTS non-2xx answers", async () => {
    const merchantRef = ref();
    receiver.plan(
      merchantRef,
      Array.from({ length: MAX_ATTEMPTS + 5 }, () => 500),
    );
    await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options);
    const [delivery] = await eventually(
      () => deliveriesFor(bank.url, merchantRef),
      (ds) => ds[0]?.status === "failed",
    );
    expect(delivery!.attempts).toHaveLength(MAX_ATTEMPTS);
    expect(receiver.for(merchantRef)).toHaveLength(MAX_ATTEMPTS);
  });

  it("an attempt the app does not answer within BANK_WEBHOOK_TIMEOUT_MS counts as failed and is retried", async () => {
    const merchantRef = ref();
    receiver.plan(merchantRef, [{ status: 200, holdMs: ATTEMPT_TIMEOUT_MS + 500 }]);
    await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options);
    const [delivery] = await eventually(
      () => deliveriesFor(bank.url, merchantRef),
      (ds) => ds[0]?.status === "delivered",
    );
    expect(delivery!.attempts[0]!.error).toMatch(/timeout/);
    expect(delivery!.attempts[1]!.status).toBe(200);
  });

  it("retryDelayMs grows geometrically within [ceiling/2, ceiling] and stops at the maximum", () => {
    for (const draw of [0, 0.5, 0.999]) {
      const random = () => draw;
      expect(retryDelayMs(1, 100, 1000, random)).toBeGreaterThanOrEqual(50);
      expect(retryDelayMs(1, 100, 1000, random)).toBeLessThanOrEqual(100);
      expect(retryDelayMs(3, 100, 1000, random)).toBeGreaterThanOrEqual(200);
      expect(retryDelayMs(3, 100, 1000, random)).toBeLessThanOrEqual(400);
      expect(retryDelayMs(20, 100, 1000, random)).toBeLessThanOrEqual(1000);
      expect(retryDelayMs(20, 100, 1000, random)).toBeGreaterThanOrEqual(500);
    }
  });
});

describe("sandbox bank: listing and cancelling", () => {
  it("lists charges created at or after `since`, oldest first, in bounded pages", async () => {
    const since = new Date(Date.now() - 1).toISOString();
    const refs = [ref(), ref(), ref()];
    for (const merchantRef of refs) await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options);

    const all = await listChargesSince(since, { ...options, limit: 1000 });
    expect(all.kind).toBe("page");
    if (all.kind !== "page") return;
    expect(all.charges.map((c) => c.merchantRef).filter((r) => refs.includes(r))).toEqual(refs);
    for (const c of all.charges) expect(Date.parse(c.createdAt)).toBeGreaterThanOrEqual(Date.parse(since));

    // Page through with limit=1: every charge once, in the same order.
    const seen: string[] = [];
    let startingAfter: string | undefined;
    for (let page = 0; page < 1000; page++) {
      const result = await listChargesSince(since, { ...options, limit: 1, startingAfter });
      if (result.kind !== "page") throw new Error(JSON.stringify(result));
      seen.push(...result.charges.map((c) => c.merchantRef));
      if (!result.hasMore) break;
      startingAfter = result.charges.at(-1)!.id;
    }
    expect(seen).toEqual(all.charges.map((c) => c.merchantRef));

    const future = await listChargesSince(new Date(Date.now() + 3_600_000).toISOString(), options);
    expect(future).toEqual({ kind: "page", charges: [], hasMore: false });
    expect(await listChargesSince("yesterday", options)).toEqual({
      kind: "rejected",
      status: 400,
      code: "invalid_request",
    });
    expect(await listChargesSince(since, { ...options, limit: 1001 })).toEqual({
      kind: "rejected",
      status: 400,
      code: "invalid_request",
    });
  });

  it("cancel before any charge makes the key unusable for good (409), and repeats say the same", async () => {
    const merchantRef = ref();
    expect(await cancelCharge(merchantRef, options)).toEqual({ kind: "cancelled" });
    expect(await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options)).toEqual({
      kind: "rejected",
      status: 409,
      code: "idempotency_key_cancelled",
    });
    expect(await cancelCharge(merchantRef, options)).toEqual({ kind: "cancelled" });
    expect(await getCharge(merchantRef, options)).toEqual({ kind: "not_found" });
  });

  it("cancel after a charge changes nothing and reports the charge", async () => {
    const merchantRef = ref();
    const created = await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options);
    const cancelled = await cancelCharge(merchantRef, options);
    expect(cancelled).toMatchObject({ kind: "charge_exists", charge: { merchantRef } });
    if (created.kind === "charge" && cancelled.kind === "charge_exists")
      expect(cancelled.charge.id).toBe(created.charge.id);
    expect(await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options)).toMatchObject({
      kind: "charge",
      replayed: true,
    });
  });
});

describe("sandbox bank: controls", () => {
  it("global fault rates can be changed at run time", async () => {
    const set = await postJson(`${bank.url}/_sandbox/faults`, { decline: 1 });
    expect(set.status).toBe(200);
    try {
      expect(set.json).toMatchObject({ rates: { decline: 1, slow: 0 } });
      const declined = await createCharge({ merchantRef: ref(), amountMinor: 100, currency: "USD" }, options);
      expect(declined).toMatchObject({ kind: "charge", charge: { status: "declined" } });
      expect((await postJson(`${bank.url}/_sandbox/faults`, { decline: 2 })).status).toBe(400);
    } finally {
      await postJson(`${bank.url}/_sandbox/faults`, { decline: 0 });
    }
    const normal = await createCharge({ merchantRef: ref(), amountMinor: 100, currency: "USD" }, options);
    expect(normal).toMatchObject({ kind: "charge", charge: { status: "pending" } });
  });
});

describe("sandbox bank: restarts and outages", () => {
  it("acknowledges a charge or a cancellation only once it is in the state file", async () => {
    // Read right after the reply, before the bank's own timers (settlement after WEBHOOK_DELAY_MS) save anything.
    const merchantRef = ref();
    expect(await createCharge({ merchantRef, amountMinor: 100, currency: "USD" }, options)).toMatchObject({
      kind: "charge",
    });
    const afterCharge = await readPersistedState(mainStateFile);
    expect(afterCharge.charges.some((c) => c.merchantRef === merchantRef)).toBe(true);

    const cancelledRef = ref();
    expect(await cancelCharge(cancelledRef, options)).toEqual({ kind: "cancelled" });
    const afterCancel = await readPersistedState(mainStateFile);
    expect(afterCancel.cancelledKeys).toContain(cancelledRef);
  });

  it("keeps charges and cancelled keys across a crash, and resumes undelivered webhooks", async () => {
    const stateFile = join(stateDir, "restart", "bank-state.json");
    let second: RunningBank | undefined;
    const first = await startBank({ env: bankEnv(stateFile) });
    try {
      const firstOptions = { bankUrl: first.url, timeoutMs: 5000 };
      expect((await postJson(`${first.url}/_sandbox/webhooks/pause`, {})).status).toBe(200);
      const merchantRef = ref();
      const cancelledRef = ref();
      const created = await createCharge({ merchantRef, amountMinor: 4200, currency: "USD" }, firstOptions);
      expect(created.kind).toBe("charge");
      expect(await cancelCharge(cancelledRef, firstOptions)).toEqual({ kind: "cancelled" });
      // Wait until the webhook is queued (pending, never attempted while paused).
      await eventually(
        () => deliveriesFor(first.url, merchantRef),
        (ds) => ds.length === 1 && ds[0]!.status === "pending",
      );
      // Crash: SIGKILL gives no chance to save; only what was persisted before acknowledging survives.
      expect((await first.kill()).signal).toBe("SIGKILL");
      expect(receiver.for(merchantRef)).toEqual([]);

      second = await startBank({ env: bankEnv(stateFile) });
      const secondOptions = { bankUrl: second.url, timeoutMs: 5000 };
      // Pausing is not persisted: the pending delivery goes out after the restart.
      await receiver.waitFor(() => receiver.for(merchantRef).length >= 1);
      expect(receiver.for(merchantRef)[0]!.event.type).toBe("charge.succeeded");
      const found = await getCharge(merchantRef, secondOptions);
      expect(found).toMatchObject({ kind: "found", charge: { amount: 4200, status: "succeeded" } });
      if (created.kind === "charge" && found.kind === "found") expect(found.charge.id).toBe(created.charge.id);
      expect(await createCharge({ merchantRef, amountMinor: 4200, currency: "USD" }, secondOptions)).toMatchObject({
        kind: "charge",
        replayed: true,
      });
      expect(
        await createCharge({ merchantRef: cancelledRef, amountMinor: 1, currency: "USD" }, secondOptions),
      ).toMatchObject({
        kind: "rejected",
        status: 409,
      });

      // Graceful stop exits 0; then the bank is down and every call is an unknown outcome.
      await second.stop();
      expect(second.exitStatus()).toEqual({ code: 0, signal: null });
      const down = { bankUrl: second.url, timeoutMs: 2000 };
      expect(await createCharge({ merchantRef: ref(), amountMinor: 1, currency: "USD" }, down)).toEqual({
        kind: "unknown",
        reason: "network",
        detail: "ECONNREFUSED",
      });
      expect(await getCharge(merchantRef, down)).toMatchObject({ kind: "unknown", reason: "network" });
      expect(await cancelCharge(merchantRef, down)).toMatchObject({ kind: "unknown", reason: "network" });
      expect(await listChargesSince(new Date().toISOString(), down)).toMatchObject({
        kind: "unknown",
        reason: "network",
      });
    } finally {
      await first.kill();
      await second?.kill();
    }
  });
});

describe("bank client: answers it cannot trust", () => {
  let fake: Server;
  let fakeUrl = "";
  let answer: (res: ServerResponse) => void = (res) => res.end();

  beforeAll(async () => {
    fake = createServer((req, res) => {
      req.resume();
      req.on("end", () => answer(res));
    });
    await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
    fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    fake.closeAllConnections();
    await new Promise<void>((resolve) => fake.close(() => resolve()));
  });

  const input = { merchantRef: "topup:u1:r1", amountMinor: 100, currency: "USD" };

  it("5xx is server_error (the bank may have charged)", async () => {
    answer = (res) => res.writeHead(500).end("oops");
    expect(await createCharge(input, { bankUrl: fakeUrl, timeoutMs: 2000 })).toMatchObject({
      kind: "unknown",
      reason: "server_error",
    });
  });

  it("an unreadable 2xx is bad_response, never success", async () => {
    answer = (res) => res.writeHead(201, { "content-type": "application/json" }).end("{not json");
    expect(await createCharge(input, { bankUrl: fakeUrl, timeoutMs: 2000 })).toMatchObject({
      kind: "unknown",
      reason: "bad_response",
    });
    answer = (res) =>
      res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ id: "ch_1", status: "weird" }));
    expect(await createCharge(input, { bankUrl: fakeUrl, timeoutMs: 2000 })).toMatchObject({
      kind: "unknown",
      reason: "bad_response",
    });
  });

  /** A well-formed succeeded charge for `input`'s key, padded with `paddingBytes` of an extra field. */
  const paddedCharge = (paddingBytes: number) =>
    JSON.stringify({
      id: "ch_big",
      status: "succeeded",
      merchantRef: input.merchantRef,
      amount: input.amountMinor,
      currency: input.currency,
      createdAt: "2026-12-01T00:00:00.000Z",
      padding: "x".repeat(paddingBytes),
    });

  it("an answer over 4 MiB is bad_response and is not read to its end, declared or streamed", async () => {
    // A charge for this very key, padded past the bound: read whole, it would be a success.
    const charge = paddedCharge(4 * 1024 * 1024);
    const chunk = Buffer.from("x".repeat(64 * 1024));
    let streamedBytes = 0;
    for (const declared of [true, false]) {
      answer = (res) => {
        if (declared) {
          res.writeHead(201, { "content-type": "application/json" }).end(charge);
          return;
        }
        // Chunked, no declared length; the server stops writing when the client goes away.
        res.writeHead(201, { "content-type": "application/json" });
        res.write(charge.slice(0, -1));
        const more = () => {
          while (!res.destroyed && streamedBytes < 64 * 1024 * 1024) {
            streamedBytes += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", more);
          }
          res.end("}");
        };
        more();
      };
      expect(await createCharge(input, { bankUrl: fakeUrl, timeoutMs: 5000 })).toEqual({
        kind: "unknown",
        reason: "bad_response",
        detail: "response too large",
      });
    }
    // The client stopped reading long before the 64 MiB the server was ready to send.
    expect(streamedBytes).toBeLessThan(32 * 1024 * 1024);
  });

  it("negative control: the same padded charge under the bound is read and is a success", async () => {
    const charge = paddedCharge(1024 * 1024);
    answer = (res) => res.writeHead(201, { "content-type": "application/json" }).end(charge);
    expect(await createCharge(input, { bankUrl: fakeUrl, timeoutMs: 5000 })).toMatchObject({
      kind: "charge",
      charge: { id: "ch_big", status: "succeeded" },
    });
  });

  it("a charge for another merchant reference is bad_response", async () => {
    answer = (res) =>
      res.writeHead(201, { "content-type": "application/json" }).end(
        JSON.stringify({
          id: "ch_1",
          status: "succeeded",
          merchantRef: "topup:u2:r1",
          amount: 100,
          currency: "USD",
          createdAt: new Date().toISOString(),
        }),
      );
    expect(await createCharge(input, { bankUrl: fakeUrl, timeoutMs: 2000 })).toMatchObject({
      kind: "unknown",
      reason: "bad_response",
    });
  });

  it("a 4xx without the error shape is rejected with a generic code", async () => {
    answer = (res) => res.writeHead(429).end("slow down");
    expect(await createCharge(input, { bankUrl: fakeUrl, timeoutMs: 2000 })).toEqual({
      kind: "rejected",
      status: 429,
      code: "http_429",
    });
  });
});
