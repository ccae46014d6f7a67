/**
 * Negative controls of the chargeback guards, kept runnable (contract section 12): each scenario of
 * tests/integration/chargebacks.test.ts run through the real code, and through the broken alternative its guard
 * exists against. The scenario's assertions pass for the first and fail for the second, which is the evidence that
 * the tests bite:
 * - the claim keyed by the dispute id (a chargeback keyed by anything per delivery lands once per delivery);
 * - the bank's word before money moves (a handler that believes the event's outcome debits on a forged event);
 * - credits repay debt first (a credit that only raises the balance leaves the debt open and payments refused);
 * - payments refused while a debt is open (a debit decided by the balance alone pays from money that is owed).
 * In-process against a real PostgreSQL, Redis and a real sandbox bank.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getDispute, type BankDispute } from "@/lib/bank/disputes";
import { applyBankDispute } from "@/lib/chargebacks/apply-dispute";
import { getWallet } from "@/lib/wallet/get-wallet";
import { createTestUser, testPool } from "../helpers/db";
import { freshRefId, seedBalance } from "../helpers/ledger";
import {
  bankDisputeOf,
  deliver,
  disputeEventBodies,
  ledgerOf,
  openDisputeKeptOpen,
  pay,
  topUp,
} from "./chargeback-fixtures";
import { BANK_TIMEOUT_MS, startTestBank, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank({ settleDelayMs: 30 });
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

const bankOptions = () => ({ bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS });

/** How a signed dispute event is applied: the real handler, or a broken alternative. Returns nothing. */
type Apply = (body: string, copy: number) => Promise<void>;

const realHandler: Apply = async (body) => {
  await deliver(body);
};

/** The event's dispute as the bank reports it now (both broken handlers below still ask the bank, or not). */
async function bankDisputeFor(body: string): Promise<BankDispute> {
  const { data } = JSON.parse(body) as { data: { disputeId: string } };
  const looked = await getDispute(data.disputeId, bankOptions());
  if (looked.kind !== "found") throw new Error(`no dispute ${data.disputeId}`);
  return looked.dispute;
}

/** Broken: asks the bank, but keys the chargeback by the delivery instead of the dispute id. */
const keyedPerDelivery: Apply = async (body, copy) => {
  const dispute = await bankDisputeFor(body);
  const { id } = JSON.parse(body) as { id: string };
  await applyBankDispute({ ...dispute, id: `${dispute.id}.${id}.${copy}` }, { actor: "webhook", detail: "control" });
};

/** Broken: believes the event's outcome instead of asking the bank. */
const trustingHandler: Apply = async (body) => {
  const { data } = JSON.parse(body) as {
    data: {
      disputeId: string;
      chargeId: string;
      merchantRef: string;
      amount: number;
      currency: string;
      outcome?: string;
    };
  };
  const now = new Date().toISOString();
  const lost = data.outcome === "lost";
  await applyBankDispute(
    {
      id: data.disputeId,
      chargeId: data.chargeId,
      merchantRef: data.merchantRef,
      amount: data.amount,
      currency: data.currency,
      status: lost ? "lost" : "open",
      openedAt: now,
      lostAt: lost ? now : null,
      closedAt: lost ? now : null,
      updatedAt: now,
    },
    { actor: "webhook", detail: "control" },
  );
};

/** Scenario 1: every dispute event of a lost dispute delivered three times. */
async function lostDeliveredThrice(apply: Apply) {
  const user = await createTestUser();
  const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-ctl"), 2200);
  await bankDisputeOf(bank.url, merchantRef, "lost");
  for (const body of await disputeEventBodies(bank.url, merchantRef)) for (let c = 1; c <= 3; c++) await apply(body, c);
  return ledgerOf(user.id);
}

function assertOneChargeback(outcome: Awaited<ReturnType<typeof ledgerOf>>): void {
  expect(outcome.entries).toHaveLength(1);
  expect(outcome).toMatchObject({ balance: 0, debt: 0 });
}

/** Scenario 2: a forged "closed lost" event for a dispute the bank keeps open. */
async function forgedLost(apply: Apply) {
  const user = await createTestUser();
  const merchantRef = await topUp(user.id, freshRefId("ctl-forged"), 1600);
  const { chargeId, dispute } = await openDisputeKeptOpen(bank.url, merchantRef);
  const body = JSON.stringify({
    id: freshRefId("evt_forged"),
    type: "charge.dispute_closed",
    created: new Date().toISOString(),
    data: { chargeId, merchantRef, amount: 1600, currency: "USD", disputeId: dispute.id, outcome: "lost" },
  });
  await apply(body, 1);
  return ledgerOf(user.id);
}

function assertNothingMoved(outcome: Awaited<ReturnType<typeof ledgerOf>>): void {
  expect(outcome).toEqual({ balance: 1600, debt: 0, entries: [] });
}

/** How a credit reaches the wallet in scenario 3: the real top-up, or a credit that only raises the balance. */
type Credit = (userId: string, amountMinor: number) => Promise<void>;
const realCredit: Credit = async (userId, amountMinor) => {
  await topUp(userId, freshRefId("ctl-repay"), amountMinor);
};
const balanceOnlyCredit: Credit = (userId, amountMinor) => seedBalance(userId, amountMinor);

/** Scenario 3: a debt of 3000 (spent, then charged back), then a credit of 3500. */
async function creditAfterDebt(credit: Credit) {
  const user = await createTestUser();
  const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-ctl-debt"), 3000);
  await pay(user.id, 3000);
  await bankDisputeOf(bank.url, merchantRef, "lost");
  for (const body of await disputeEventBodies(bank.url, merchantRef)) await deliver(body);
  await credit(user.id, 3500);
  return { userId: user.id, wallet: await getWallet(user.id), payment: await pay(user.id, 100) };
}

function assertDebtRepaidFirst(outcome: Awaited<ReturnType<typeof creditAfterDebt>>): void {
  expect(outcome.wallet).toEqual({ balance: 500, currency: "USD" });
  expect(outcome.payment).toEqual({ status: 201, code: null });
}

// The payment's debit as it was before debts existed: decided by the balance alone.
const BALANCE_ONLY_DEBIT_SQL = `
UPDATE wallets SET balance_minor = balance_minor - $2 WHERE user_id = $1 AND balance_minor >= $2 RETURNING balance_minor`;

describe("chargeback negative controls", () => {
  it("claim keyed by the dispute id: the real handler lands one chargeback from nine deliveries", async () => {
    assertOneChargeback(await lostDeliveredThrice(realHandler));
  });

  it("control: keyed per delivery, the same deliveries land several chargebacks and the scenario's assertions fail", async () => {
    const outcome = await lostDeliveredThrice(keyedPerDelivery);
    expect(() => assertOneChargeback(outcome)).toThrow();
    expect(outcome.entries.length).toBeGreaterThan(1);
    expect(outcome.debt).toBeGreaterThan(0);
  });

  it("the bank's word first: the real handler moves nothing on a forged lost event", async () => {
    assertNothingMoved(await forgedLost(realHandler));
  });

  it("control: a handler that believes the event debits on the forged event, and the assertions fail", async () => {
    const outcome = await forgedLost(trustingHandler);
    expect(() => assertNothingMoved(outcome)).toThrow();
    expect(outcome).toMatchObject({ balance: 0, debt: 0 });
  });

  it("credits repay debt first: after the real top-up the debt is gone and payments are back", async () => {
    assertDebtRepaidFirst(await creditAfterDebt(realCredit));
  });

  it("control: a credit that only raises the balance leaves the debt open; the payment guard still refuses, a balance-only debit would pay", async () => {
    const outcome = await creditAfterDebt(balanceOnlyCredit);
    expect(() => assertDebtRepaidFirst(outcome)).toThrow();
    expect(outcome.wallet).toEqual({ balance: 3500, debt: 3000, currency: "USD" });
    // The payment guard (ledger_debit_verdict: no debt open) is what refused it, although the balance covers it ...
    expect(outcome.payment).toEqual({ status: 402, code: "debt_outstanding" });
    // ... and the debit without it pays from money that is owed.
    const paid = await testPool().query(BALANCE_ONLY_DEBIT_SQL, [outcome.userId, 100]);
    expect(paid.rowCount).toBe(1);
  });
});
