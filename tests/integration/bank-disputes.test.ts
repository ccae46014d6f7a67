/**
 * The sandbox bank's disputes (docs/bank-sandbox.md, "Disputes"): the `sbx-dispute-` switches open a dispute once
 * the charge succeeds and step it through its plan (lost; lost then reversed), each change announced by a
 * `charge.disputed` / `charge.dispute_closed` webhook, readable through `GET /disputes/{id}` and the paged
 * `GET /disputes?since=`, and persisted in the state journal across a restart. A real bank process.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningBank, startBank } from "@/scripts/lib/stack";
import { readPersistedState } from "@/bank/state";
import { createCharge } from "@/lib/bank/client";
import { getDispute, listDisputesSince, type BankDispute } from "@/lib/bank/disputes";
import { freshRefId } from "../helpers/ledger";
import { freePort } from "@/scripts/lib/ports";
import { randomWebhookSecret } from "@/scripts/lib/secrets";
import { BANK_TIMEOUT_MS, waitForChargeStatus } from "./reconciler-fixtures";

let bank: RunningBank;
let stateDir: string;
let bankEnv: Record<string, string>;

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), "dispute-bank-"));
  // Webhooks go to a closed port (one attempt, recorded, given up): the deliveries keep each event's body.
  bankEnv = {
    APP_URL: `http://127.0.0.1:${await freePort()}`,
    BANK_STATE_FILE: join(stateDir, "bank-state.json"),
    BANK_WEBHOOK_SECRETS: randomWebhookSecret(),
    BANK_SYNC_SUCCESS: "1",
    BANK_WEBHOOK_DELAY_MS: "30",
    BANK_WEBHOOK_MAX_ATTEMPTS: "1",
    BANK_WEBHOOK_TIMEOUT_MS: "500",
    BANK_SHUTDOWN_GRACE_MS: "200",
    BANK_LOG_LEVEL: "info",
  };
  bank = await startBank({ env: bankEnv });
}, 60_000);

afterAll(async () => {
  await bank?.stop();
  await rm(stateDir, { recursive: true, force: true });
});

const options = () => ({ bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS });

/** Charges `amount` under a ref id with `prefix`, waits until it succeeded; returns the charge and its reference. */
async function succeededCharge(prefix: string, amount = 1500) {
  const merchantRef = `topup:user-disputes:${freshRefId(prefix)}`;
  const charged = await createCharge({ merchantRef, amountMinor: amount, currency: "USD" }, options());
  if (charged.kind !== "charge") throw new Error(`no charge: ${JSON.stringify(charged)}`);
  await waitForChargeStatus(bank.url, merchantRef, "succeeded");
  return { charge: charged.charge, merchantRef };
}

/** Polls the listing (every 20 ms, at most 10 s) until the charge's dispute satisfies `done`. */
async function disputeOf(chargeId: string, done: (d: BankDispute) => boolean): Promise<BankDispute> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const page = await listDisputesSince("2000-01-01T00:00:00Z", { ...options(), limit: 1000 });
    if (page.kind !== "page") throw new Error(`listing failed: ${JSON.stringify(page)}`);
    const found = page.disputes.find((d) => d.chargeId === chargeId);
    if (found && done(found)) return found;
    if (Date.now() > deadline) throw new Error(`dispute of ${chargeId}: ${JSON.stringify(found)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The dispute events the bank queued for a merchant reference (their bodies), oldest first. */
async function disputeEvents(merchantRef: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  const response = await fetch(`${bank.url}/_sandbox/deliveries?merchantRef=${encodeURIComponent(merchantRef)}`);
  const { deliveries } = (await response.json()) as { deliveries: Array<{ type: string; body: string }> };
  return deliveries.filter((d) => d.type.startsWith("charge.dispute")).map((d) => JSON.parse(d.body));
}

describe("sandbox bank: disputes", () => {
  it("sbx-dispute- opens a dispute after the charge succeeds and closes it lost, with one webhook per step", async () => {
    const { charge, merchantRef } = await succeededCharge("sbx-dispute-lost");
    const lost = await disputeOf(charge.id, (d) => d.status === "lost");
    expect(lost).toMatchObject({ chargeId: charge.id, merchantRef, amount: 1500, currency: "USD", status: "lost" });
    expect(lost.lostAt).not.toBeNull();
    const looked = await getDispute(lost.id, options());
    expect(looked).toEqual({ kind: "found", dispute: lost });
    const events = await disputeEvents(merchantRef);
    expect(events.map((e) => [e.type, e.data.disputeId, e.data.outcome ?? e.data.status])).toEqual([
      ["charge.disputed", lost.id, "open"],
      ["charge.dispute_closed", lost.id, "lost"],
    ]);
  });

  it("sbx-dispute-reversed- is lost, then won: the reversal keeps lostAt and sends a second dispute_closed", async () => {
    const { charge, merchantRef } = await succeededCharge("sbx-dispute-reversed-x");
    const won = await disputeOf(charge.id, (d) => d.status === "won");
    expect(won.lostAt).not.toBeNull();
    expect(Date.parse(won.closedAt!)).toBeGreaterThanOrEqual(Date.parse(won.lostAt!));
    const events = await disputeEvents(merchantRef);
    expect(events.map((e) => e.data.outcome ?? e.data.status)).toEqual(["open", "lost", "won"]);
  });

  it("a charge without the switch has no dispute, and an unknown dispute id is 404", async () => {
    const { charge } = await succeededCharge("plain");
    const page = await listDisputesSince("2000-01-01T00:00:00Z", { ...options(), limit: 1000 });
    expect(page.kind === "page" && page.disputes.some((d) => d.chargeId === charge.id)).toBe(false);
    expect(await getDispute("dp_000000000000000000000000", options())).toEqual({ kind: "not_found" });
  });

  it("pages by cursor in change order: every change is listed once after the cursor, none skipped", async () => {
    const start = await listDisputesSince(new Date().toISOString(), options());
    if (start.kind !== "page") throw new Error("no page");
    const cursor = start.nextCursor;
    const disputed = await Promise.all([1, 2, 3].map(() => succeededCharge("sbx-dispute-page")));
    for (const { charge } of disputed) await disputeOf(charge.id, (d) => d.status === "lost");
    const seen: BankDispute[] = [];
    let since = cursor;
    for (let pages = 0; pages < 20; pages++) {
      const page = await listDisputesSince(since, { ...options(), limit: 2 });
      if (page.kind !== "page") throw new Error("no page");
      seen.push(...page.disputes);
      since = page.nextCursor;
      if (!page.hasMore) break;
    }
    const ids = new Set(disputed.map((d) => d.charge.id));
    const mine = seen.filter((d) => ids.has(d.chargeId));
    // Each dispute changed twice (opened, lost); the listing shows it once, at its latest change, after the cursor.
    expect(mine.map((d) => d.status)).toEqual(["lost", "lost", "lost"]);
    expect(new Set(mine.map((d) => d.id)).size).toBe(3);
    const bad = await fetch(`${bank.url}/disputes?since=yesterday`);
    expect(bad.status).toBe(400);
  });

  it("the control opens a dispute on any succeeded charge; disputes persist in the journal and survive a restart", async () => {
    const { charge } = await succeededCharge("plain-control");
    const opened = await fetch(`${bank.url}/_sandbox/disputes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chargeId: charge.id, plan: ["won"] }),
    });
    expect(opened.status).toBe(201);
    const { id } = (await opened.json()) as { id: string };
    const won = await disputeOf(charge.id, (d) => d.status === "won");
    expect(won).toMatchObject({ id, lostAt: null });
    const persisted = await readPersistedState(bankEnv.BANK_STATE_FILE!);
    expect(persisted.disputes.find((d) => d.id === id)?.status).toBe("won");
    await bank.stop();
    bank = await startBank({ env: bankEnv });
    expect(await getDispute(id, options())).toEqual({ kind: "found", dispute: won });
  });
});

describe("C26: the sandbox never returns more than the charge through refunds and a dispute together", () => {
  /** `POST /_sandbox/disputes` for `chargeId` with `plan`; the answer's status and body. */
  async function openDispute(chargeId: string, plan?: unknown) {
    const res = await fetch(`${bank.url}/_sandbox/disputes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(plan === undefined ? { chargeId } : { chargeId, plan }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** `POST /refunds` of `amount` on `chargeId` under a fresh key; the answer's status and body. */
  async function postRefund(chargeId: string, amount: number, key = freshRefId("refund-key")) {
    const res = await fetch(`${bank.url}/refunds`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ chargeId, amount }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it("C26: a refund of a charge whose dispute is open or lost is 409 charge_disputed; a repeat of a refund made before still answers it", async () => {
    const { charge } = await succeededCharge("plain-refund-then-dispute", 1000);
    const key = freshRefId("early");
    expect((await postRefund(charge.id, 100, key)).status).toBe(201);
    expect((await openDispute(charge.id, [])).status).toBe(201);
    expect(await postRefund(charge.id, 100)).toMatchObject({
      status: 409,
      body: { error: { code: "charge_disputed" } },
    });
    expect((await postRefund(charge.id, 100, key)).status).toBe(200);
    const lost = await succeededCharge("plain-lost", 1000);
    expect((await openDispute(lost.charge.id, ["lost"])).status).toBe(201);
    await disputeOf(lost.charge.id, (d) => d.status === "lost");
    expect((await postRefund(lost.charge.id, 1)).status).toBe(409);
  });

  it("C26: a dispute covers what was not refunded (pending refunds count); a fully refunded charge cannot be disputed", async () => {
    const { charge } = await succeededCharge("plain-partly-refunded", 1000);
    expect((await postRefund(charge.id, 250)).status).toBe(201);
    const opened = await openDispute(charge.id);
    expect(opened).toMatchObject({ status: 201, body: { amount: 750 } });
    const full = await succeededCharge("plain-fully-refunded", 1000);
    expect((await postRefund(full.charge.id, 1000)).status).toBe(201);
    expect(await openDispute(full.charge.id)).toMatchObject({
      status: 409,
      body: { error: { code: "not_disputable" } },
    });
  });

  it("C26: one dispute per charge, and only the plans card networks run; a dispute won (reversed) lets the rest be refunded", async () => {
    const { charge } = await succeededCharge("plain-one-dispute", 1000);
    expect((await openDispute(charge.id, ["lost", "won"])).status).toBe(201);
    expect(await openDispute(charge.id)).toMatchObject({ status: 409, body: { error: { code: "already_disputed" } } });
    const other = await succeededCharge("plain-bad-plan", 1000);
    for (const plan of [
      ["won", "lost"],
      ["lost", "lost"],
      ["lost", "won", "lost"],
    ])
      expect((await openDispute(other.charge.id, plan)).status, JSON.stringify(plan)).toBe(400);
    await disputeOf(charge.id, (d) => d.status === "won");
    expect((await postRefund(charge.id, 1000)).status).toBe(201);
  });
});
