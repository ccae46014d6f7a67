/**
 * The sandbox bank steps a dispute on its own timer, whatever else happens (docs/bank-sandbox.md, "Disputes"): a
 * dispute opened through `POST /_sandbox/disputes` on a charge with the no-webhook switch (`sbx-nohook-`) sends no
 * event, and nothing else wakes the bank, yet it is lost and then reversed on time. A real bank process of its own,
 * so no other test's deliveries or charges wake its timer.
 *
 * Negative control, by hand: in bank/engine.ts, arm the timer only after queueing an event (the `schedule` call
 * behind `if (!charge.faults.nohook)`, as before): the dispute then stays `open` and the test times out waiting.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningBank, startBank } from "@/scripts/lib/stack";
import { createCharge } from "@/lib/bank/client";
import { getDispute } from "@/lib/bank/disputes";
import { freePort } from "@/scripts/lib/ports";
import { randomWebhookSecret } from "@/scripts/lib/secrets";
import { freshRefId } from "../helpers/ledger";
import { waitFor } from "../helpers/wait";
import { BANK_TIMEOUT_MS, waitForChargeStatus } from "./reconciler-fixtures";

/** The bank's step delay: a dispute's steps are this far apart (BANK_WEBHOOK_DELAY_MS). */
const STEP_DELAY_MS = 30;
/**
 * How long the steps may take: two steps of 30 ms, with room for a loaded 2-core machine. Far below "never", which
 * is what a dispute whose timer is not armed takes on a bank nobody else talks to.
 */
const STEPS_WAIT_MS = 5000;

let bank: RunningBank;
let stateDir: string;

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), "dispute-timer-bank-"));
  bank = await startBank({
    env: {
      // Webhooks would go to a closed port; the no-webhook charge below never sends any.
      APP_URL: `http://127.0.0.1:${await freePort()}`,
      BANK_STATE_FILE: join(stateDir, "bank-state.json"),
      BANK_WEBHOOK_SECRETS: randomWebhookSecret(),
      BANK_WEBHOOK_DELAY_MS: String(STEP_DELAY_MS),
      BANK_WEBHOOK_MAX_ATTEMPTS: "1",
      BANK_SHUTDOWN_GRACE_MS: "200",
    },
  });
}, 60_000);

afterAll(async () => {
  await bank?.stop();
  await rm(stateDir, { recursive: true, force: true });
});

describe("sandbox bank: a dispute's steps run on the bank's own timer", () => {
  it("a dispute opened on an sbx-nohook- charge is lost, then reversed, with no other traffic and no webhook", async () => {
    const merchantRef = `topup:user-dispute-timer:${freshRefId("sbx-nohook-")}`;
    const options = { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS };
    const charged = await createCharge({ merchantRef, amountMinor: 700, currency: "USD" }, options);
    if (charged.kind !== "charge") throw new Error(`no charge: ${JSON.stringify(charged)}`);
    // Settled by the timer; nothing is queued for a no-webhook charge, so the timer is idle from here on.
    await waitForChargeStatus(bank.url, merchantRef, "succeeded");

    const opened = await fetch(`${bank.url}/_sandbox/disputes`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chargeId: charged.charge.id, plan: ["lost", "won"] }),
    });
    expect(opened.status).toBe(201);
    const { id: disputeId } = (await opened.json()) as { id: string };

    // Only reads from here on: GET /disputes/{id} wakes nothing in the bank.
    const reversed = await waitFor(
      () => getDispute(disputeId, options),
      (looked) => looked.kind === "found" && looked.dispute.status === "won",
      { what: `dispute ${disputeId} to be lost and then reversed`, timeoutMs: STEPS_WAIT_MS, intervalMs: 50 },
    );
    expect(reversed).toMatchObject({ kind: "found", dispute: { status: "won", lostAt: expect.any(String) } });

    const deliveries = await fetch(`${bank.url}/_sandbox/deliveries?${new URLSearchParams({ merchantRef })}`);
    expect(((await deliveries.json()) as { deliveries: unknown[] }).deliveries).toEqual([]);
  });
});
