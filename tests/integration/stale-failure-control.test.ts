/**
 * C14 negative control, kept runnable: the same scenario (a charge that succeeded at the bank; its stale
 * `charge.failed` arrives first, then `charge.succeeded`) run through the real webhook handler, and through the
 * handler this project had before failures were confirmed with the bank, which failed the row on the event's word. The scenario's assertions
 * (the row ends succeeded, credited once) pass for the first and fail for the second, which is the evidence that
 * tests/http/stale-failure.test.ts bites. In-process against a real PostgreSQL and a real sandbox bank.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCharge } from "@/lib/bank/client";
import { signWebhook } from "@/lib/bank/signature";
import { failEntry, getEntryById, markProcessing } from "@/lib/ledger/transitions";
import { handleBankWebhook } from "@/lib/webhooks/handle-bank-webhook";
import { createTestUser } from "../helpers/db";
import { balanceOf, claimEntry, claimRequest, freshRefId, transitionsOf } from "../helpers/ledger";
import { testStack } from "../helpers/stack";
import { BANK_TIMEOUT_MS, startTestBank, waitForChargeStatus, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank();
  // The handler confirms failures with BANK_URL (lib/env.ts reads it on first use, after this line).
  process.env.BANK_URL = bank.url;
});

afterAll(async () => {
  await bank?.stop();
});

type Delivery = (rawBody: string, event: { type: string; merchantRef: string; refId: string }) => Promise<void>;

/** The real handler, as the route calls it: signed bytes in, the handler decides. */
const realHandler: Delivery = async (rawBody) => {
  const secrets = testStack().webhookSecrets.split(",");
  const result = await handleBankWebhook(
    Buffer.from(rawBody),
    signWebhook(rawBody, secrets, Math.floor(Date.now() / 1000)),
  );
  if (result.kind !== "received") throw new Error(`handler answered ${JSON.stringify(result)}`);
};

/** The broken alternative: a `charge.failed` fails the row on its own word (the real handler for successes). */
const trustingHandler: Delivery = async (rawBody, event) => {
  if (event.type !== "charge.failed") return realHandler(rawBody, event);
  const [userId] = event.merchantRef.split(":").slice(1);
  const { findEntryByKey } = await import("@/lib/ledger/claim");
  const entry = await findEntryByKey({ userId: userId!, type: "topup", refId: event.refId });
  await failEntry(
    { userId: entry!.userId, entryId: entry!.id },
    { actor: "webhook", guard: { kind: "status_only" }, reason: "declined_by_bank" },
  );
};

/** A stale failure first, then the success, for a charge that succeeded. Returns what the ledger holds after. */
async function staleFailureFirst(deliver: Delivery) {
  const user = await createTestUser();
  const refId = freshRefId("c14-control");
  const claim = await claimEntry(claimRequest(user.id, { refId, amountMinor: 990 }));
  const ref = { userId: user.id, entryId: claim.id };
  await markProcessing(ref, claim.fencingToken);
  const merchantRef = `topup:${user.id}:${refId}`;
  const charged = await createCharge(
    { merchantRef, amountMinor: 990, currency: "USD" },
    { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS },
  );
  if (charged.kind !== "charge") throw new Error("the bank did not charge");
  await waitForChargeStatus(bank.url, merchantRef, "succeeded");
  const data = { chargeId: charged.charge.id, merchantRef, amount: 990, currency: "USD" };
  for (const type of ["charge.failed", "charge.succeeded"]) {
    await deliver(JSON.stringify({ id: `evt_${type}_${refId}`, type, data }), { type, merchantRef, refId });
  }
  const credits = (await transitionsOf(user.id, claim.id)).filter((t) => t.to === "succeeded").length;
  return { status: (await getEntryById(ref))?.status, balance: await balanceOf(user.id), credits };
}

/** The assertions of the C14 tests: the row ends succeeded, credited once. */
function assertCreditedOnce(outcome: { status?: string; balance: number; credits: number }): void {
  expect(outcome).toEqual({ status: "succeeded", balance: 990, credits: 1 });
}

describe("C14 negative control: a handler that trusts charge.failed", () => {
  it("the real handler passes the C14 assertions (the bank is asked before anything fails)", async () => {
    assertCreditedOnce(await staleFailureFirst(realHandler));
  });

  it("the trusting handler fails them: the stale failure fails the row; only an adjustment then repairs the balance", async () => {
    const outcome = await staleFailureFirst(trustingHandler);
    expect(() => assertCreditedOnce(outcome)).toThrow();
    // The top-up itself never credits; the success (confirmed with the bank) lands as the row's adjustment.
    expect(outcome).toMatchObject({ status: "failed", balance: 990, credits: 0 });
  });
});
