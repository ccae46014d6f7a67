/**
 * Negative controls of the refund guards (contract section 11), kept runnable: each scenario runs against the real
 * code and against the broken alternative it replaces. The scenario's assertions pass for the first and fail for the
 * second, which is the evidence that tests/integration/refunds.test.ts bites. In-process against a real PostgreSQL,
 * Redis and sandbox bank. Run: `npx vitest run --project integration tests/integration/refunds-control.test.ts`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBalanceCheck } from "@/lib/audit/checks/balance-matches-ledger";
import { merchantRefFor } from "@/lib/bank/merchant-ref";
import { getRefund } from "@/lib/bank/refunds-client";
import { applyBankDispute } from "@/lib/chargebacks/apply-dispute";
import { findEntryByKey } from "@/lib/ledger/claim";
import { releaseReservation } from "@/lib/ledger/refunds";
import { failEntry } from "@/lib/ledger/transitions";
import { createPayment } from "@/lib/payments/create-payment";
import { createRefund } from "@/lib/refunds/create-refund";
import { refundMerchantRefFor } from "@/lib/refunds/refund-ref";
import type { LedgerEntry } from "@/lib/ledger/entry";
import type { BankRefund } from "@/lib/bank/refunds-client";
import { createTestUser, testPool } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { bankDisputeOf, ledgerOf } from "./chargeback-fixtures";
import { deliverRefundEvent, moneyOf, succeededTopup, waitForBankRefund } from "./refund-fixtures";
import { BANK_TIMEOUT_MS, startTestBank, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  // Refunds stay pending for 3 s at the bank: a stale refund.failed can arrive before the bank's word exists.
  bank = await startTestBank({ settleDelayMs: 3000 });
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

// ---------------------------------------------------------------------------------------------------------------
// 1. The claim reserves (debits) before the bank is called.
// ---------------------------------------------------------------------------------------------------------------

/** Starts a refund of the whole top-up and returns once the bank has it (still pending); `finish` ends it. */
type StartRefund = (user: string, topup: LedgerEntry) => Promise<{ finish(): Promise<void> }>;

const realRefund: StartRefund = async (user, topup) => {
  await createRefund({
    userId: user,
    topupRefId: topup.refId,
    refundId: freshRefId("ctl"),
    amountMinor: topup.amountMinor,
  });
  return { async finish() {} };
};

/** The broken alternative: check the balance, call the bank, debit when the refund succeeds. */
const debitAtSuccess: StartRefund = async (user, topup) => {
  const seen = await testPool().query("SELECT balance_minor FROM wallets WHERE user_id = $1", [user]);
  if (Number(seen.rows[0]?.balance_minor) < topup.amountMinor) throw new Error("balance short");
  return {
    async finish() {
      // The debit now finds the money spent: it moves nothing, and the bank refunds anyway.
      await testPool().query(
        "UPDATE wallets SET balance_minor = balance_minor - $2 WHERE user_id = $1 AND balance_minor >= $2",
        [user, topup.amountMinor],
      );
    },
  };
};

async function paymentDuringRefund(start: StartRefund) {
  const user = await createTestUser();
  const topup = await succeededTopup(user.id, 1000);
  const refund = await start(user.id, topup);
  const paid = await createPayment({ userId: user.id, orderId: freshRefId("o"), amountMinor: 1000, currency: "USD" });
  await refund.finish();
  return {
    paymentStatus: paid.kind === "response" ? paid.response.status : paid.kind,
    ...(await moneyOf(user.id, topup.id)),
  };
}

/** The assertions of "a payment racing a refund cannot overspend". */
function assertNotSpentTwice(outcome: { paymentStatus: number | string; balance: number }): void {
  expect(outcome).toMatchObject({ paymentStatus: 402, balance: 0 });
}

describe("refund negative control 1: a refund that debits at success instead of at the claim", () => {
  it("the real refund passes: the payment during the refund is refused", async () => {
    assertNotSpentTwice(await paymentDuringRefund(realRefund));
  });

  it("debit-at-success fails them: the payment spends the money the bank is refunding", async () => {
    const outcome = await paymentDuringRefund(debitAtSuccess);
    expect(() => assertNotSpentTwice(outcome)).toThrow();
    expect(outcome.paymentStatus).toBe(201);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2 and 3. refund.failed gives back once, and only on the bank's word.
// ---------------------------------------------------------------------------------------------------------------

type FailureDelivery = (refund: BankRefund, eventId: string) => Promise<void>;

const realDelivery: FailureDelivery = async (refund, eventId) => {
  const result = await deliverRefundEvent("refund.failed", refund, eventId);
  if (result.kind === "invalid_signature") throw new Error("signature refused");
};

async function rowOf(refund: BankRefund): Promise<LedgerEntry> {
  const [, userId, refundId] = refund.merchantRef.split(":");
  return (await findEntryByKey({ userId: userId!, type: "refund", refId: refundId! }))!;
}

/** Broken: asks the bank, then gives the money back and fails the row in separate statements (not tied together). */
const giveBackThenFail: FailureDelivery = async (refund) => {
  const looked = await getRefund(refund.id, { bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS });
  if (looked.kind !== "found" || looked.refund.status !== "failed") return;
  const row = await rowOf(refund);
  await testPool().query("UPDATE wallets SET balance_minor = balance_minor + $2 WHERE user_id = $1", [
    row.userId,
    row.amountMinor,
  ]);
  await failEntry(
    { userId: row.userId, entryId: row.id },
    { actor: "webhook", guard: { kind: "status_only" }, reason: "declined_by_bank" },
  );
};

/** Broken: trusts the event's word and gives the reservation back without asking the bank. */
const trustingDelivery: FailureDelivery = async (refund) => {
  const row = await rowOf(refund);
  await releaseReservation({ userId: row.userId, entryId: row.id }, { actor: "webhook", detail: "trusted the event" });
};

/** A refund of 250 that the bank fails; `refund.failed` delivered three times at once once the bank says failed. */
async function failedRefundDeliveredThrice(deliver: FailureDelivery) {
  const user = await createTestUser();
  const topup = await succeededTopup(user.id, 1000);
  const refundId = freshRefId("sbx-refund-fail-ctl");
  await createRefund({ userId: user.id, topupRefId: topup.refId, refundId, amountMinor: 250 });
  const failed = await waitForBankRefund(
    bank.url,
    topup.bankChargeId!,
    refundMerchantRefFor(user.id, refundId),
    "failed",
  );
  await Promise.all([1, 2, 3].map(() => deliver(failed, `evt_ctl_${refundId}`)));
  return { balance: (await moneyOf(user.id, topup.id)).balance };
}

function assertGivenBackOnce(outcome: { balance: number }): void {
  expect(outcome).toEqual({ balance: 1000 });
}

/** A refund of 250 the bank still has pending, and a stale `refund.failed` for it. */
async function staleFailure(deliver: FailureDelivery) {
  const user = await createTestUser();
  const topup = await succeededTopup(user.id, 1000);
  const refundId = freshRefId("stale-ctl");
  await createRefund({ userId: user.id, topupRefId: topup.refId, refundId, amountMinor: 250 });
  const pending = await waitForBankRefund(
    bank.url,
    topup.bankChargeId!,
    refundMerchantRefFor(user.id, refundId),
    "pending",
  );
  await deliver({ ...pending, status: "failed" }, `evt_stale_${refundId}`);
  return { balance: (await moneyOf(user.id, topup.id)).balance, status: (await rowOf(pending)).status };
}

function assertNothingGivenBack(outcome: { balance: number; status: string }): void {
  expect(outcome).toEqual({ balance: 750, status: "processing" });
}

describe("refund negative control 2: a give-back not tied to the row's move", () => {
  it("the real handler passes: the reservation comes back once", async () => {
    assertGivenBackOnce(await failedRefundDeliveredThrice(realDelivery));
  });

  it("give-back-then-fail fails them: three deliveries give the money back three times", async () => {
    const outcome = await failedRefundDeliveredThrice(giveBackThenFail);
    expect(() => assertGivenBackOnce(outcome)).toThrow();
    expect(outcome.balance).toBe(750 + 3 * 250);
  });
});

describe("refund negative control 3: a handler that trusts refund.failed", () => {
  it("the real handler passes: nothing is given back while the bank says pending", async () => {
    assertNothingGivenBack(await staleFailure(realDelivery));
  });

  it("the trusting handler fails them: the stale failure gives back money the bank is still refunding", async () => {
    const outcome = await staleFailure(trustingDelivery);
    expect(() => assertNothingGivenBack(outcome)).toThrow();
    expect(outcome).toEqual({ balance: 1000, status: "failed" });
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 4. A reservation given back while a chargeback's debt is open repays the debt first (contract sections 11, 12).
// ---------------------------------------------------------------------------------------------------------------

/**
 * A refund of 600 on a top-up of 1000 that the bank fails, and a payment of the 400 left; before the refund's failure
 * arrives, a dispute of the top-up is lost and its chargeback, which covers what was not refunded (400, case C26),
 * finds the balance at 0 and leaves 400 owed. Then `refund.failed` is delivered once.
 */
async function failedRefundAfterChargeback(deliver: FailureDelivery) {
  const user = await createTestUser();
  const topup = await succeededTopup(user.id, 1000);
  const refundId = freshRefId("sbx-refund-fail-debt");
  await createRefund({ userId: user.id, topupRefId: topup.refId, refundId, amountMinor: 600 });
  const paid = await createPayment({
    userId: user.id,
    orderId: freshRefId("spend"),
    amountMinor: 400,
    currency: "USD",
  });
  expect(paid).toMatchObject({ kind: "response", response: { status: 201 } });
  const opened = await fetch(`${bank.url}/_sandbox/disputes`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ chargeId: topup.bankChargeId, plan: ["lost"] }),
  });
  expect(opened.status).toBe(201);
  const lost = await bankDisputeOf(bank.url, merchantRefFor(user.id, topup.refId), "lost");
  expect(await applyBankDispute(lost, { actor: "reconciler", detail: "control: lost dispute" })).toMatchObject({
    kind: "applied",
  });
  expect(lost.amount).toBe(400);
  expect(await ledgerOf(user.id)).toMatchObject({ balance: 0, debt: 400 });
  const failed = await waitForBankRefund(
    bank.url,
    topup.bankChargeId!,
    refundMerchantRefFor(user.id, refundId),
    "failed",
  );
  await deliver(failed, `evt_debt_${refundId}`);
  const { balance, debt } = await ledgerOf(user.id);
  const audit = await createBalanceCheck({ userIds: [user.id] }).run();
  return { balance, debt, balanceCheckOk: audit.ok };
}

/** The assertions of "a give-back is a credit: it repays the debt first" (with 7.1 holding). */
function assertDebtRepaidFirst(outcome: { balance: number; debt: number; balanceCheckOk: boolean }): void {
  expect(outcome).toEqual({ balance: 200, debt: 0, balanceCheckOk: true });
}

describe("refund negative control 4: a give-back that ignores the wallet's debt", () => {
  it("the real handler passes: the 600 given back repay the 400 owed first", async () => {
    assertDebtRepaidFirst(await failedRefundAfterChargeback(realDelivery));
  });

  it("a give-back to the balance alone fails them: a balance and a debt side by side", async () => {
    const outcome = await failedRefundAfterChargeback(giveBackThenFail);
    expect(() => assertDebtRepaidFirst(outcome)).toThrow();
    // balance − debt is the same either way; 7.1 sees it because a wallet never holds a balance beside a debt.
    expect(outcome).toEqual({ balance: 600, debt: 400, balanceCheckOk: false });
  });
});
