/**
 * The books (contract section 13; docs/decisions/058): every movement writes one balanced journal transaction in the
 * statement that moves the wallet, each wallet posting records the running balance (a debt is a negative account),
 * the postings are append-only, and each of the audit's book checks fails on the corruption it is for (negative
 * controls, kept runnable: each tamper below is a test).
 *
 * In-process against a real PostgreSQL, Redis and sandbox bank: top-ups and payments through the request path, a
 * lost dispute through the real webhook handler (chargeback-fixtures.ts). Tampering bypasses the append-only trigger
 * in its own session only (`session_replication_role = replica`), as an intruder with the table owner's rights would.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAudit } from "@/lib/audit/run-audit";
import { BANK_CLEARING_CHECK_NAME, createBankClearingCheck } from "@/lib/audit/checks/bank-clearing";
import {
  BOOKS_BALANCED_CHECK_NAME,
  createBooksBalancedCheck,
  createJournalMatchesEntriesCheck,
  createWalletAccountsCheck,
  JOURNAL_MATCHES_ENTRIES_CHECK_NAME,
  WALLET_ACCOUNTS_CHECK_NAME,
} from "@/lib/audit/checks/books";
import { createRefund } from "@/lib/refunds/create-refund";
import { creditReward } from "@/lib/rewards/credit-reward";
import { createTestUser, testPool } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { bankDisputeOf, deliver, disputeEventBodies, pay, topUp } from "./chargeback-fixtures";
import { deliverRefundEvent, waitForBankRefund } from "./refund-fixtures";
import { BANK_TIMEOUT_MS, startTestBank, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank({ settleDelayMs: 30 });
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

interface PostingRow {
  type: string;
  event: string;
  account: string;
  amount: number;
  after: number | null;
}

/** The user's postings in the order they were written, with their entry's type. */
async function postingsOf(userId: string): Promise<PostingRow[]> {
  const result = await testPool().query<{
    type: string;
    event: string;
    account: string;
    amount: string;
    after: string | null;
  }>(
    `SELECT e.type, p.event, p.account, p.amount_minor::text AS amount, p.balance_after_minor::text AS after
       FROM ledger_postings p JOIN ledger_entries e ON e.user_id = p.user_id AND e.id = p.entry_id
      WHERE p.user_id = $1 ORDER BY p.id`,
    [userId],
  );
  return result.rows.map((r) => ({ ...r, amount: Number(r.amount), after: r.after === null ? null : Number(r.after) }));
}

/** The books' checks over one user: the names of those that fail. */
async function failingBookChecks(userId: string): Promise<string[]> {
  const scope = { userIds: [userId] };
  const checks = [
    createBooksBalancedCheck(scope),
    createJournalMatchesEntriesCheck(scope),
    createWalletAccountsCheck(scope),
    createBankClearingCheck({ bankUrl: bank.url, timeoutMs: BANK_TIMEOUT_MS }, scope, { stuckAfterS: 0 }),
  ];
  const results = await Promise.all(checks.map((check) => check.run()));
  return results.filter((r) => !r.ok).map((r) => r.name);
}

/** Runs `sql` with the append-only trigger bypassed, in a session of its own. */
async function tamper(sql: string, params: unknown[]): Promise<void> {
  const client = await testPool().connect();
  try {
    await client.query("BEGIN");
    await client.query("SET LOCAL session_replication_role = replica");
    await client.query(sql, params);
    await client.query("COMMIT");
  } finally {
    client.release();
  }
}

/** A user with a top-up of 5000, a payment of 4000 and a reward: balanced books to tamper with. */
async function bookedUser(): Promise<string> {
  const user = await createTestUser();
  await topUp(user.id, freshRefId("books"), 5000);
  expect(await pay(user.id, 4000)).toEqual({ status: 201, code: null });
  expect(await failingBookChecks(user.id)).toEqual([]);
  return user.id;
}

describe("the books", () => {
  it("books every movement once, with the running balance: top-up, payment, reward, a chargeback into debt, its repayment", async () => {
    const user = await createTestUser();
    const merchantRef = await topUp(user.id, freshRefId("sbx-dispute-books"), 5000);
    expect(await pay(user.id, 4000)).toEqual({ status: 201, code: null });
    const reward = await creditReward({ userId: user.id, adId: freshRefId("ad") });
    expect(reward.kind === "response" && reward.response.status).toBe(201);
    await bankDisputeOf(bank.url, merchantRef, "lost");
    for (const body of await disputeEventBodies(bank.url, merchantRef)) await deliver(body);
    await topUp(user.id, freshRefId("repay"), 6000);

    const rewardMinor = (await postingsOf(user.id)).find((p) => p.type === "reward" && p.account === "wallet")!.amount;
    const afterReward = 1000 + rewardMinor;
    expect(await postingsOf(user.id)).toEqual([
      { type: "topup", event: "move", account: "bank_clearing", amount: -5000, after: null },
      { type: "topup", event: "move", account: "wallet", amount: 5000, after: 5000 },
      { type: "payment", event: "move", account: "wallet", amount: -4000, after: 1000 },
      { type: "payment", event: "move", account: "merchants_payable", amount: 4000, after: null },
      { type: "reward", event: "move", account: "rewards_funded", amount: -rewardMinor, after: null },
      { type: "reward", event: "move", account: "wallet", amount: rewardMinor, after: afterReward },
      // The dispute takes 5000 from an account of 1000 + the reward: the account goes below zero by the debt.
      { type: "chargeback", event: "move", account: "wallet", amount: -5000, after: afterReward - 5000 },
      { type: "chargeback", event: "move", account: "bank_clearing", amount: 5000, after: null },
      { type: "topup", event: "move", account: "bank_clearing", amount: -6000, after: null },
      { type: "topup", event: "move", account: "wallet", amount: 6000, after: afterReward + 1000 },
    ]);
    const wallet = await testPool().query<{ balance: string; debt: string }>(
      "SELECT balance_minor::text AS balance, debt_minor::text AS debt FROM wallets WHERE user_id = $1",
      [user.id],
    );
    expect(wallet.rows[0]).toEqual({ balance: String(afterReward + 1000), debt: "0" });
    const report = await runAudit({ userIds: [user.id], bankUrl: bank.url, bankTimeoutMs: BANK_TIMEOUT_MS });
    expect(report.checks.filter((c) => !c.ok)).toEqual([]);
  });

  it("refuses to update or delete a posting (append-only: restrict_violation)", async () => {
    const userId = await bookedUser();
    await expect(
      testPool().query("UPDATE ledger_postings SET amount_minor = amount_minor + 1 WHERE user_id = $1", [userId]),
    ).rejects.toMatchObject({ code: "23001", message: "ledger_postings is append-only" });
    await expect(testPool().query("DELETE FROM ledger_postings WHERE user_id = $1", [userId])).rejects.toMatchObject({
      code: "23001",
    });
    await expect(
      testPool().query("UPDATE ledger_transitions SET actor = 'x' WHERE user_id = $1", [userId]),
    ).rejects.toMatchObject({ code: "23001", message: "ledger_transitions is append-only" });
  });

  it("negative control: a tampered posting (its amount changed) unbalances its transaction and its wallet's account", async () => {
    const userId = await bookedUser();
    await tamper(
      `UPDATE ledger_postings SET amount_minor = amount_minor + 1
        WHERE user_id = $1 AND account = 'merchants_payable'`,
      [userId],
    );
    expect(await failingBookChecks(userId)).toEqual([BOOKS_BALANCED_CHECK_NAME]);
  });

  it("negative control: an unbalanced transaction (a third leg) is found", async () => {
    const userId = await bookedUser();
    await tamper(
      `INSERT INTO ledger_postings (user_id, entry_id, event, account, amount_minor, currency)
       SELECT user_id, entry_id, event, 'rewards_funded', 7, currency FROM ledger_postings
        WHERE user_id = $1 AND account = 'merchants_payable'`,
      [userId],
    );
    expect(await failingBookChecks(userId)).toEqual([BOOKS_BALANCED_CHECK_NAME]);
  });

  it("negative control: a missing transaction (a payment's postings removed) is found, and its wallet is off its account", async () => {
    const userId = await bookedUser();
    await tamper(
      `DELETE FROM ledger_postings p USING ledger_entries e
        WHERE p.user_id = $1 AND e.user_id = p.user_id AND e.id = p.entry_id AND e.type = 'payment'`,
      [userId],
    );
    expect(await failingBookChecks(userId)).toEqual([JOURNAL_MATCHES_ENTRIES_CHECK_NAME, WALLET_ACCOUNTS_CHECK_NAME]);
  });

  it("negative control: a running balance off the running sum is found, though every transaction balances", async () => {
    const userId = await bookedUser();
    await tamper(
      `UPDATE ledger_postings SET balance_after_minor = balance_after_minor + 1
        WHERE user_id = $1 AND account = 'wallet' AND amount_minor > 0`,
      [userId],
    );
    expect(await failingBookChecks(userId)).toEqual([WALLET_ACCOUNTS_CHECK_NAME]);
  });

  it("negative control: a wallet moved without its books (the balance bumped by SQL) is found", async () => {
    const userId = await bookedUser();
    await testPool().query("UPDATE wallets SET balance_minor = balance_minor + 5 WHERE user_id = $1", [userId]);
    expect(await failingBookChecks(userId)).toEqual([WALLET_ACCOUNTS_CHECK_NAME]);
  });

  it("negative control: a refund the bank made that the books never settled leaves the clearing account above the bank's figure", async () => {
    const userId = await bookedUser();
    const charge = await testPool().query<{ id: string }>(
      "SELECT bank_charge_id AS id FROM ledger_entries WHERE user_id = $1 AND type = 'topup'",
      [userId],
    );
    const chargeId = charge.rows[0]!.id;
    // A refund the books made and settled, so the check reads this charge's refunds at the bank; then one they did not.
    const topupRefId = (
      await testPool().query<{ ref_id: string }>(
        "SELECT ref_id FROM ledger_entries WHERE user_id = $1 AND type = 'topup'",
        [userId],
      )
    ).rows[0]!.ref_id;
    const booked = freshRefId("booked");
    expect((await createRefund({ userId, topupRefId, refundId: booked, amountMinor: 100 })).kind).toBe("response");
    const made = await waitForBankRefund(bank.url, chargeId, `refund:${userId}:${booked}`, "succeeded");
    expect(await deliverRefundEvent("refund.succeeded", made, `evt_books_${booked}`)).toMatchObject({
      outcome: "refund_succeeded",
    });
    expect(await failingBookChecks(userId)).toEqual([]);
    const stray = await fetch(`${bank.url}/refunds`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": `refund:${userId}:stray` },
      body: JSON.stringify({ chargeId, amount: 50 }),
    });
    expect(stray.status).toBe(201);
    await waitForBankRefund(bank.url, chargeId, `refund:${userId}:stray`, "succeeded");
    expect(await failingBookChecks(userId)).toEqual([BANK_CLEARING_CHECK_NAME]);
  });
});
