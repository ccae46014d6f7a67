/**
 * The books' backfill (prisma/migrations/20261211100000_double_entry_books; docs/decisions/058): a ledger written by
 * the previous release had no postings, and the migration books it from its entries and their transitions. This
 * test books one user's ledger of every kind of movement both ways, live (the release's functions, as it ran) and
 * by the migration's own query (read from the migration file, limited to the user), and requires the same journal:
 * the same transactions, legs, amounts and running balances, in the same order.
 *
 * In-process against a real PostgreSQL, Redis and sandbox bank: top-ups, refunds (one the bank makes, one it fails),
 * a payment, a reward and a dispute lost then reversed, through the request path and the webhook.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRefund } from "@/lib/refunds/create-refund";
import { refundMerchantRefFor } from "@/lib/refunds/refund-ref";
import { creditReward } from "@/lib/rewards/credit-reward";
import { createTestUser, testPool } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { bankDisputeOf, deliver, disputeEventBodies, pay, topUp } from "./chargeback-fixtures";
import { deliverRefundEvent, succeededTopup, waitForBankRefund } from "./refund-fixtures";
import { startTestBank, type TestBank } from "./reconciler-fixtures";

const MIGRATION = join(process.cwd(), "prisma/migrations/20261211100000_double_entry_books/migration.sql");

/** The migration's backfill query (from `WITH moved AS` to its end), without its INSERT. */
function backfillQuery(): string {
  const text = readFileSync(MIGRATION, "utf8");
  const start = text.indexOf("WITH moved AS");
  const end = text.lastIndexOf(";");
  expect(start).toBeGreaterThan(0);
  return text.slice(start, end);
}

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank({ settleDelayMs: 30 });
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

type Leg = [entryId: string, event: string, account: string, amountMinor: string, balanceAfterMinor: string | null];

async function liveJournal(userId: string): Promise<Leg[]> {
  const result = await testPool().query<{ leg: Leg }>(
    `SELECT ARRAY[entry_id::text, event, account, amount_minor::text, balance_after_minor::text] AS leg
       FROM ledger_postings WHERE user_id = $1 ORDER BY id`,
    [userId],
  );
  return result.rows.map((r) => r.leg);
}

async function backfilledJournal(userId: string): Promise<Leg[]> {
  const result = await testPool().query<{ leg: Leg }>(
    `SELECT ARRAY[b.entry_id::text, b.event, b.account, b.amount_minor::text, b.balance_after_minor::text] AS leg
       FROM (${backfillQuery()}) AS b WHERE b.user_id = $1`,
    [userId],
  );
  return result.rows.map((r) => r.leg);
}

describe("the books' backfill", () => {
  it("books an existing ledger of every kind of movement as the live path did: same legs, amounts and running balances, in order", async () => {
    const user = await createTestUser();
    const disputed = await topUp(user.id, freshRefId("sbx-dispute-reversed-bf"), 5000);
    const refunded = await succeededTopup(user.id, 3000);
    const made = freshRefId("bf-ok");
    const failed = freshRefId("sbx-refund-fail-bf");
    for (const [refundId, amountMinor] of [
      [made, 100],
      [failed, 200],
    ] as const) {
      const result = await createRefund({ userId: user.id, topupRefId: refunded.refId, refundId, amountMinor });
      expect(result.kind).toBe("response");
    }
    const succeeded = await waitForBankRefund(
      bank.url,
      refunded.bankChargeId!,
      refundMerchantRefFor(user.id, made),
      "succeeded",
    );
    const declined = await waitForBankRefund(
      bank.url,
      refunded.bankChargeId!,
      refundMerchantRefFor(user.id, failed),
      "failed",
    );
    expect(await deliverRefundEvent("refund.succeeded", succeeded, `evt_bf_${made}`)).toMatchObject({
      outcome: "refund_succeeded",
    });
    expect(await deliverRefundEvent("refund.failed", declined, `evt_bf_${failed}`)).toMatchObject({
      outcome: "refund_released",
    });
    expect(await pay(user.id, 1000)).toEqual({ status: 201, code: null });
    const reward = await creditReward({ userId: user.id, adId: freshRefId("ad") });
    expect(reward.kind === "response" && reward.response.status).toBe(201);
    await bankDisputeOf(bank.url, disputed, "won");
    for (const body of await disputeEventBodies(bank.url, disputed)) await deliver(body);

    const live = await liveJournal(user.id);
    const events = await testPool().query<{ e: string }>(
      `SELECT string_agg(DISTINCT e.type || '/' || p.event, ',' ORDER BY e.type || '/' || p.event) AS e
         FROM ledger_postings p JOIN ledger_entries e ON e.user_id = p.user_id AND e.id = p.entry_id
        WHERE p.user_id = $1`,
      [user.id],
    );
    // Every rule of ledger_journal_rules but the adjustment's is exercised.
    expect(events.rows[0]?.e).toBe(
      "chargeback/move,chargeback_reversal/move,payment/move,refund/release,refund/reserve,refund/settle,reward/move,topup/move",
    );
    expect(await backfilledJournal(user.id)).toEqual(live);
  });
});
