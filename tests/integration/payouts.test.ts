/**
 * Payouts (contract section 14; docs/decisions/060): a withdrawal moves money exactly once. In-process against a real
 * PostgreSQL, Redis and sandbox bank (its own process, behind a proxy that counts `POST /payouts` per key and can hold
 * one reply back). Races are staged on row locks held by a test session and released only once every contender is
 * queued behind them (pg_blocking_pids), never by sleeping. Each guard's test has a negative control beside it: the
 * same staging with the guard taken away (a scratch database with a patched copy of the real function file, or the
 * naive TypeScript call a handler without the guard would make), showing the money moving twice.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { payoutMerchantRefFor } from "@/lib/bank/merchant-ref";
import type { BankPayout } from "@/lib/bank/payouts-client";
import { findEntryByKey } from "@/lib/ledger/claim";
import { landBankEntry } from "@/lib/ledger/dispute-entries";
import { operationKey } from "@/lib/ledger/keys";
import { claimPayout } from "@/lib/ledger/payouts";
import { releaseReservation } from "@/lib/ledger/refunds";
import { replayCacheKey } from "@/lib/ledger/replay-cache";
import type { OperationResult } from "@/lib/ledger/outcome";
import { migrate } from "@/lib/migrate";
import { createPayment } from "@/lib/payments/create-payment";
import { createPayout, type CreatePayoutInput } from "@/lib/payouts/create-payout";
import { settlePayout } from "@/lib/payouts/settle-payout";
import { reconcileOnce } from "@/lib/reconciler/reconcile-once";
import { redis } from "@/lib/redis";
import { getWallet } from "@/lib/wallet/get-wallet";
import { createScratchDatabase, createTestUser, dropScratchDatabases, testPool } from "../helpers/db";
import { functionDefinition } from "../helpers/function-files";
import { balanceOf, countRows, dedicatedClient, freshRefId, transitionsOf } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";
import {
  bankPayoutOf,
  bankPayoutsListed,
  DESTINATION,
  deliverPayoutEvent,
  payoutClaimRequest,
  journalEventsOf,
  limitUsedToday,
  startPayoutBank,
  startPayoutProxy,
  transactionsOf,
  waitForBankPayout,
  type PayoutProxy,
} from "./payout-fixtures";
import { backendPid, passOptions, type TestBank } from "./reconciler-fixtures";
import { succeededTopup } from "./refund-fixtures";

/** PAYOUT_DAILY_LIMIT_MINOR for this file: every other test stays far below it per user and day. */
const DAILY_LIMIT_MINOR = 100_000;

let bank: TestBank;
let proxy: PayoutProxy;
const savedEnv = { BANK_URL: process.env.BANK_URL, PAYOUT_DAILY_LIMIT_MINOR: process.env.PAYOUT_DAILY_LIMIT_MINOR };

beforeAll(async () => {
  // Payouts settle 30 ms after they are made; a returned one comes back 200 ms after it was paid.
  bank = await startPayoutBank({ settleDelayMs: 30, returnDelayMs: 200 });
  proxy = await startPayoutProxy(bank.url);
  // The operations read the environment on first use (lib/env.ts), after these lines.
  process.env.BANK_URL = proxy.url;
  process.env.PAYOUT_DAILY_LIMIT_MINOR = String(DAILY_LIMIT_MINOR);
}, 60_000);

afterAll(async () => {
  await proxy?.stop();
  await bank?.stop();
  await dropScratchDatabases();
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** The answer's status and exact body text (what "byte-identical" compares), and the body parsed. */
function responseOf(result: OperationResult) {
  if (result.kind !== "response") throw new Error(`expected a response, got ${JSON.stringify(result)}`);
  return { status: result.response.status, text: result.response.body, body: JSON.parse(result.response.body) };
}

function payoutInput(userId: string, amountMinor: number, refId = freshRefId("po")): CreatePayoutInput {
  return { userId, refId, amountMinor, currency: "USD", destination: DESTINATION };
}

/** Holds the rows `sql` selects FOR UPDATE in a dedicated session until `release()`. */
async function holdRowLock(sql: string, params: unknown[]) {
  const client = await dedicatedClient("payout-test-holder");
  await client.query("BEGIN");
  await client.query(sql, params);
  const pid = await backendPid(client);
  return {
    pid,
    async release() {
      await client.query("COMMIT");
      await client.end();
    },
  };
}

const lockWallet = (userId: string) => holdRowLock("SELECT 1 FROM wallets WHERE user_id = $1 FOR UPDATE", [userId]);
const lockRow = (userId: string, entryId: number) =>
  holdRowLock("SELECT 1 FROM ledger_entries WHERE user_id = $1 AND id = $2 FOR UPDATE", [userId, entryId]);

async function payoutRow(userId: string, refId: string) {
  const row = await findEntryByKey(operationKey(userId, "payout", refId));
  if (!row) throw new Error(`no payout row ${refId}`);
  return row;
}

/** Lets the reconciler take the row over: the request's lease ends now (test setup, instead of waiting LEASE_MS). */
async function expireLease(userId: string, entryId: number): Promise<void> {
  await testPool().query(
    "UPDATE ledger_entries SET lease_expires_at = now() - interval '1 second' WHERE user_id = $1 AND id = $2",
    [userId, entryId],
  );
}

/** A claim request for `ledger_claim_payout` called directly (the scratch database's controls, the limit). */

/**
 * `n` concurrent claims of one payout key in a scratch database (migrated from the real files), its wallet holding
 * 10,000. `withoutClaimIndex` is the negative control: the claim index dropped and the real ledger_claim file's
 * `ON CONFLICT (user_id, type, ref_id)` made target-less, so nothing decides the key any more.
 */
async function claimsInScratch(withoutClaimIndex: boolean, n: number) {
  const url = await createScratchDatabase("payout_claim");
  await migrate(url);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const pool = new pg.Pool({ connectionString: url, max: n });
  try {
    if (withoutClaimIndex) {
      const target = "ON CONFLICT (user_id, type, ref_id) DO NOTHING";
      const text = functionDefinition("ledger_claim");
      if (!text.includes(target)) throw new Error("ledger_claim no longer says what the control replaces");
      await admin.query("DROP INDEX ledger_entries_user_id_type_ref_id_key");
      await admin.query(text.replace(target, "ON CONFLICT DO NOTHING"));
    }
    await admin.query(`INSERT INTO "user" (id, name, email, role) VALUES ('u1', 'u1', 'u1@example.test', 'user')`);
    await admin.query("INSERT INTO wallets (user_id, balance_minor, currency) VALUES ('u1', 10000, 'USD')");
    const request = payoutClaimRequest("u1", "same-key", 1000, DAILY_LIMIT_MINOR);
    const outcomes = await Promise.all(Array.from({ length: n }, () => claimPayout(request, pool)));
    const wallet = await admin.query("SELECT balance_minor::int AS b FROM wallets WHERE user_id = 'u1'");
    const reserves = await admin.query(
      "SELECT count(DISTINCT entry_id)::int AS n FROM ledger_postings WHERE user_id = 'u1' AND event = 'reserve'",
    );
    return {
      held: outcomes.filter((o) => o.kind === "held").length,
      balance: wallet.rows[0].b as number,
      reserves: reserves.rows[0].n as number,
    };
  } finally {
    await pool.end();
    await admin.end();
  }
}

describe("payouts: one key, one payout", () => {
  it("the same payout from eight tabs at once: one bank payout, one hold, every answer byte-identical", async () => {
    const user = await createTestUser();
    await succeededTopup(user.id, 5000);
    const input = payoutInput(user.id, 1200, freshRefId("tabs"));
    const holder = await lockWallet(user.id);
    const racing = Array.from({ length: 8 }, () => createPayout(input));
    // Every claim is queued on the wallet's lock before any of them may run.
    await waitForBlockedSessions({ blockedBy: holder.pid }, 8);
    await holder.release();
    const answers = (await Promise.all(racing)).map(responseOf);
    for (const answer of answers) expect(answer.text).toBe(answers[0]!.text);
    expect(answers[0]).toMatchObject({ status: 201, body: { payout: { refId: input.refId, amount: 1200 } } });
    expect(answers[0]!.body.payout.status).toBe("processing");
    const merchantRef = payoutMerchantRefFor(user.id, input.refId);
    expect(proxy.posts.get(merchantRef)).toBe(1);
    expect(proxy.created.get(merchantRef)).toBe(1);
    expect(await bankPayoutsListed(bank.url, merchantRef)).toHaveLength(1);
    expect(await countRows(user.id, "payout", input.refId)).toBe(1);
    expect(await balanceOf(user.id)).toBe(5000 - 1200);
    expect(await transactionsOf(user.id, "reserve")).toBe(1);
    expect(await limitUsedToday(user.id)).toBe(1200);
  });

  it("the claim decides the key under concurrency (scratch database, the real function files): one hold of five", async () => {
    expect(await claimsInScratch(false, 5)).toEqual({ held: 1, balance: 9000, reserves: 1 });
  });

  it("negative control: without the claim index the same five concurrent claims hold five times", async () => {
    expect(await claimsInScratch(true, 5)).toEqual({ held: 5, balance: 5000, reserves: 5 });
  });
});

describe("payouts: outcome unknown", () => {
  it("a lost reply: outcome unknown (money held), the retry answers from the same row, the reconciler posts one payout", async () => {
    const user = await createTestUser();
    await succeededTopup(user.id, 3000);
    const input = payoutInput(user.id, 700, freshRefId("sbx-po-lost"));
    const merchantRef = payoutMerchantRefFor(user.id, input.refId);
    const first = responseOf(await createPayout(input));
    // The bank made the payout, but its reply never came: the row stays processing, the money held, nothing released.
    expect(first).toMatchObject({ status: 201, body: { payout: { refId: input.refId, status: "processing" } } });
    const row = await payoutRow(user.id, input.refId);
    expect(row.status).toBe("processing");
    expect(row.bankChargeId).toBeNull();
    expect(await balanceOf(user.id)).toBe(2300);
    expect(await transactionsOf(user.id, "release")).toBe(0);
    // The bank made it (the reply was dropped after the payout was stored): asked by reference, it is there.
    expect(proxy.posts.get(merchantRef)).toBe(1);
    expect((await bankPayoutOf(bank.url, merchantRef))?.amount).toBe(700);
    // The retry (from the replay copy, then from the row itself) answers the same bytes and asks the bank nothing.
    expect(responseOf(await createPayout(input)).text).toBe(first.text);
    await redis()!.del(replayCacheKey(operationKey(user.id, "payout", input.refId)));
    expect(responseOf(await createPayout(input)).text).toBe(first.text);
    expect(proxy.posts.get(merchantRef)).toBe(1);
    expect(await countRows(user.id, "payout", input.refId)).toBe(1);
    // The request is gone; the reconciler asks the bank again with the same key once the lease has expired.
    const paid = await waitForBankPayout(bank.url, merchantRef, "paid");
    await expireLease(user.id, row.id);
    const pass = await reconcileOnce(passOptions(proxy.url, [user.id]));
    expect(pass.anomalies ?? []).toEqual([]);
    const after = await payoutRow(user.id, input.refId);
    expect(after).toMatchObject({ status: "succeeded", bankChargeId: paid.id });
    // The reconciler's POST with the same key was answered with the payout the lost request made (200, replayed).
    expect(proxy.posts.get(merchantRef)).toBe(2);
    expect(proxy.created.get(merchantRef)).toBeUndefined();
    expect(await bankPayoutsListed(bank.url, merchantRef)).toHaveLength(1);
    expect(await balanceOf(user.id)).toBe(2300);
    expect([await transactionsOf(user.id, "reserve"), await transactionsOf(user.id, "settle")]).toEqual([1, 1]);
    expect(await transactionsOf(user.id, "release")).toBe(0);
  });
});

describe("payouts: the bank's word, from every door", () => {
  it("webhook, reconciler and the request's own completion racing on one payout: one final state, one settle", async () => {
    const user = await createTestUser();
    await succeededTopup(user.id, 4000);
    const input = payoutInput(user.id, 1500, freshRefId("race"));
    const merchantRef = payoutMerchantRefFor(user.id, input.refId);
    // The request's POST reaches the bank (the payout is made); its reply is held back in the proxy.
    const held = proxy.holdReply(merchantRef);
    const request = createPayout(input);
    await held.arrived;
    const paid = await waitForBankPayout(bank.url, merchantRef, "paid");
    const row = await payoutRow(user.id, input.refId);
    expect(row.status).toBe("processing");
    const holder = await lockRow(user.id, row.id);
    const webhook = deliverPayoutEvent("payout.paid", paid, `evt_paid_${input.refId}`);
    const pass = reconcileOnce(passOptions(proxy.url, [user.id]));
    held.release();
    // The webhook's transaction, the reconciler's payout step and the request's settlement all wait on the row.
    await waitForBlockedSessions({ blockedBy: holder.pid }, 3);
    await holder.release();
    const [answer, delivered, reconciled] = await Promise.all([request, webhook, pass]);
    const after = await payoutRow(user.id, input.refId);
    expect(after).toMatchObject({ status: "succeeded", bankChargeId: paid.id });
    const toSucceeded = (await transitionsOf(user.id, row.id)).filter((t) => t.to === "succeeded");
    expect(toSucceeded).toHaveLength(1);
    expect(["webhook", "reconciler"]).toContain(toSucceeded[0]!.actor);
    expect(delivered).toEqual({
      kind: "received",
      outcome: toSucceeded[0]!.actor === "webhook" ? "payout_paid" : "duplicate",
    });
    expect(reconciled.completed).toBe(toSucceeded[0]!.actor === "reconciler" ? 1 : 0);
    expect(await balanceOf(user.id)).toBe(2500);
    expect([await transactionsOf(user.id, "reserve"), await transactionsOf(user.id, "settle")]).toEqual([1, 1]);
    expect(await transactionsOf(user.id, "release")).toBe(0);
    // The stored response is the request's answer, replayed identically, and says what was known when it was stored.
    const first = responseOf(answer);
    expect({ status: first.status, body: first.text }).toEqual(after.response);
    expect(["processing", "succeeded"]).toContain(first.body.payout.status);
    expect(responseOf(await createPayout(input)).text).toBe(first.text);
    expect(proxy.created.get(merchantRef)).toBe(1);
    expect(await bankPayoutsListed(bank.url, merchantRef)).toHaveLength(1);
  });

  /** A payout the bank has paid while its row is still processing (its `payout.paid` has not arrived yet). */
  async function paidWhileProcessing(fundedMinor: number, amountMinor: number) {
    const user = await createTestUser();
    await succeededTopup(user.id, fundedMinor);
    const input = payoutInput(user.id, amountMinor, freshRefId("forged"));
    expect(responseOf(await createPayout(input)).body.payout.status).toBe("processing");
    const paid = await waitForBankPayout(bank.url, payoutMerchantRefFor(user.id, input.refId), "paid");
    const row = await payoutRow(user.id, input.refId);
    expect(row.status).toBe("processing");
    return { user, input, paid, row };
  }

  it("a signed payout.paid that matches posts the hold in one statement without asking the bank; one that disagrees is asked (decision 064)", async () => {
    const { user, input, paid, row } = await paidWhileProcessing(2000, 800);
    // Another amount than the row's: not the fast path's to apply. The bank is asked, and its answer (paid, 800)
    // is what moves the row.
    const disagreeing = await deliverPayoutEvent("payout.paid", { ...paid, amount: 799 }, `evt_amt_${input.refId}`);
    expect(disagreeing).toEqual({ kind: "received", outcome: "payout_paid" });
    expect(proxy.lookups.get(paid.id)).toBe(1);
    // A second payout, and its matching event: applied on the signature, the bank not asked.
    const second = await paidWhileProcessing(2000, 500);
    const matching = await deliverPayoutEvent("payout.paid", second.paid, `evt_ok_${second.input.refId}`);
    expect(matching).toEqual({ kind: "received", outcome: "payout_paid" });
    expect(proxy.lookups.get(second.paid.id)).toBeUndefined();
    expect(await payoutRow(second.user.id, second.input.refId)).toMatchObject({
      status: "succeeded",
      bankChargeId: second.paid.id,
    });
    expect(await journalEventsOf(second.user.id, second.row.id)).toEqual(["reserve", "settle"]);
    expect(await balanceOf(second.user.id)).toBe(1500);
    // Delivered again: the row is final, so the long way judges it (asking the bank): a duplicate, nothing moves.
    const again = await deliverPayoutEvent("payout.paid", second.paid, `evt_ok_${second.input.refId}`);
    expect(again).toEqual({ kind: "received", outcome: "duplicate" });
    expect(await transactionsOf(second.user.id, "settle")).toBe(1);
    expect((await transitionsOf(user.id, row.id)).map((t) => t.to)).toEqual(["initiated", "processing", "succeeded"]);
  });

  it("GET /api/v1/wallet's view: `held` while a payout is unfinished, gone once the bank paid it (contract section 14)", async () => {
    const { user, paid } = await paidWhileProcessing(2000, 800);
    expect(await getWallet(user.id)).toEqual({ balance: 1200, held: 800, currency: "USD" });
    await deliverPayoutEvent("payout.paid", paid, `evt_held_${paid.id}`);
    expect(await getWallet(user.id)).toEqual({ balance: 1200, currency: "USD" });
  });

  it("a forged payout.failed for a payout the bank paid is checked with the bank: it posts the payout, releases nothing", async () => {
    const { user, input, paid, row } = await paidWhileProcessing(2000, 800);
    const forged = await deliverPayoutEvent("payout.failed", paid, `evt_forged_${input.refId}`);
    // The bank's answer to GET /payouts/{id} is what moved the row: paid.
    expect(forged).toEqual({ kind: "received", outcome: "payout_paid" });
    expect(await payoutRow(user.id, input.refId)).toMatchObject({ status: "succeeded", failureReason: null });
    // Again, once the row is final: nothing moves.
    expect(await deliverPayoutEvent("payout.failed", paid, `evt_forged2_${input.refId}`)).toEqual({
      kind: "received",
      outcome: "duplicate",
    });
    expect(await balanceOf(user.id)).toBe(1200);
    expect(await transactionsOf(user.id, "release")).toBe(0);
    expect(await transactionsOf(user.id, "settle")).toBe(1);
    expect(await limitUsedToday(user.id)).toBe(800);
    expect((await transitionsOf(user.id, row.id)).map((t) => t.to)).toEqual(["initiated", "processing", "succeeded"]);
    // And the reconciler, reading the bank's payouts, finds nothing to say.
    const pass = await reconcileOnce(passOptions(proxy.url, [user.id]));
    expect(pass.anomalies ?? []).toEqual([]);
  });

  it("negative control: a handler that trusts the event's status gives back money the bank paid out; the reconciler sees it", async () => {
    const { user, paid, row } = await paidWhileProcessing(2000, 800);
    // What a naive handler does with payout.failed: the release, on the event's word instead of the bank's.
    const naive = await releaseReservation(
      { userId: user.id, entryId: row.id },
      { actor: "webhook", detail: "naive handler: trusted payout.failed", bankRef: paid.id },
    );
    expect(naive.kind).toBe("released");
    // The bank paid 800 to the account, and the wallet holds the 800 again: the money left twice.
    expect(paid.status).toBe("paid");
    expect(await balanceOf(user.id)).toBe(2000);
    expect(await balanceOf(user.id)).not.toBe(1200);
    expect(await transactionsOf(user.id, "release")).toBe(1);
    const pass = await reconcileOnce(passOptions(proxy.url, [user.id]));
    expect(pass.anomalies).toEqual([
      expect.objectContaining({
        kind: "payout_mismatch",
        chargeId: paid.id,
        detail: expect.stringContaining("was paid, but the ledger gave the hold back"),
      }),
    ]);
  });
});

describe("payouts: a return credits once", () => {
  /** A payout the bank paid and then returned, its row still processing (no event of it has arrived). */
  async function returnedWhileProcessing(fundedMinor: number, amountMinor: number) {
    const user = await createTestUser();
    await succeededTopup(user.id, fundedMinor);
    const input = payoutInput(user.id, amountMinor, freshRefId("sbx-po-return"));
    expect(responseOf(await createPayout(input)).body.payout.status).toBe("processing");
    const returned = await waitForBankPayout(bank.url, payoutMerchantRefFor(user.id, input.refId), "returned");
    const row = await payoutRow(user.id, input.refId);
    expect(row.status).toBe("processing");
    return { user, input, returned, row };
  }

  it("payout.returned delivered three times racing a reconciler pass: one payout_return entry, credited once", async () => {
    const { user, input, returned, row } = await returnedWhileProcessing(3000, 900);
    expect(await balanceOf(user.id)).toBe(2100);
    const holder = await lockRow(user.id, row.id);
    const eventId = `evt_returned_${input.refId}`;
    const deliveries = [1, 2, 3].map(() => deliverPayoutEvent("payout.returned", returned, eventId));
    const pass = reconcileOnce(passOptions(proxy.url, [user.id]));
    await waitForBlockedSessions({ blockedBy: holder.pid }, 4);
    await holder.release();
    const results = await Promise.all(deliveries);
    const reconciled = await pass;
    const outcomes = results.map((r) => (r.kind === "received" ? r.outcome : r.kind));
    expect(outcomes.filter((o) => o === "payout_returned").length + reconciled.completed).toBe(1);
    for (const outcome of outcomes) expect(["payout_returned", "duplicate"]).toContain(outcome);
    // And once more, later, under another event id: nothing.
    expect(await deliverPayoutEvent("payout.returned", returned, `${eventId}_again`)).toEqual({
      kind: "received",
      outcome: "duplicate",
    });
    expect(await countRows(user.id, "payout_return", input.refId)).toBe(1);
    const landed = await findEntryByKey(operationKey(user.id, "payout_return", input.refId));
    expect(landed).toMatchObject({ status: "succeeded", amountMinor: 900 });
    expect(await payoutRow(user.id, input.refId)).toMatchObject({ status: "succeeded", bankChargeId: returned.id });
    expect(await balanceOf(user.id)).toBe(3000);
    expect(await transactionsOf(user.id, "settle")).toBe(1);
    expect(await transactionsOf(user.id, "release")).toBe(0);
    const returns = await testPool().query<{ n: number }>(
      "SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = $1 AND type = 'payout_return'",
      [user.id],
    );
    expect(returns.rows[0]!.n).toBe(1);
  });

  it("negative control: a return keyed by the event's id credits once per event", async () => {
    const { user, input, returned, row } = await returnedWhileProcessing(3000, 900);
    // The payout posted as paid by the real settlement (the bank's payout, as it was before its return).
    const posted = await settlePayout(
      row,
      { source: "bank", payout: { ...returned, status: "paid" } as BankPayout },
      { actor: "webhook", guard: { kind: "status_only" }, detail: "test: paid" },
    );
    expect(posted.kind).toBe("paid");
    const landing = (refId: string) =>
      landBankEntry(testPool(), {
        key: operationKey(user.id, "payout_return", refId),
        amountMinor: 900,
        currency: "USD",
        params: { amount: 900, currency: "USD", payoutId: returned.id },
        actor: "webhook",
        detail: "test: a return landed",
      });
    // The real key (the payout's ref id): a second landing of the same return is refused by the claim.
    expect(await landing(input.refId)).not.toBeNull();
    expect(await landing(input.refId)).toBeNull();
    expect(await balanceOf(user.id)).toBe(3000);
    // Keyed per event (the webhook's delivery and a second event about the same return): credited twice more.
    expect(await landing(`evt_a_${input.refId}`)).not.toBeNull();
    expect(await landing(`evt_b_${input.refId}`)).not.toBeNull();
    expect(await balanceOf(user.id)).toBe(3000 + 2 * 900);
  });
});

describe("payouts: refusals are stored", () => {
  it("402 insufficient_funds: held money is not available to a second payout", async () => {
    const user = await createTestUser();
    await succeededTopup(user.id, 1000);
    const firstInput = payoutInput(user.id, 800);
    expect(responseOf(await createPayout(firstInput)).status).toBe(201);
    const second = payoutInput(user.id, 800);
    const refused = responseOf(await createPayout(second));
    expect(refused).toMatchObject({ status: 402, body: { code: "insufficient_funds" } });
    expect(responseOf(await createPayout(second)).text).toBe(refused.text);
    expect(await payoutRow(user.id, second.refId)).toMatchObject({
      status: "failed",
      failureReason: "insufficient_funds",
    });
    expect(proxy.posts.get(payoutMerchantRefFor(user.id, second.refId))).toBeUndefined();
    expect(await balanceOf(user.id)).toBe(200);
    expect(await transactionsOf(user.id, "reserve")).toBe(1);
    expect(await limitUsedToday(user.id)).toBe(800);
  });

  it("402 debt_outstanding: a wallet owing money withdraws nothing", async () => {
    const user = await createTestUser();
    await testPool().query(
      "INSERT INTO wallets (user_id, balance_minor, debt_minor, currency) VALUES ($1, 0, 250, 'USD')",
      [user.id],
    );
    const input = payoutInput(user.id, 100);
    const refused = responseOf(await createPayout(input));
    expect(refused).toMatchObject({ status: 402, body: { code: "debt_outstanding" } });
    expect(responseOf(await createPayout(input)).text).toBe(refused.text);
    expect(await payoutRow(user.id, input.refId)).toMatchObject({
      status: "failed",
      failureReason: "debt_outstanding",
    });
    expect(proxy.posts.get(payoutMerchantRefFor(user.id, input.refId))).toBeUndefined();
    expect(await limitUsedToday(user.id)).toBe(0);
  });

  it("422 payout_limit_exceeded, and a payout the bank failed gives its day's limit back (once)", async () => {
    const user = await createTestUser();
    await succeededTopup(user.id, 150_000);
    const failing = payoutInput(user.id, 60_000, freshRefId("sbx-po-fail"));
    expect(responseOf(await createPayout(failing)).status).toBe(201);
    expect(await limitUsedToday(user.id)).toBe(60_000);
    // The balance covers it; the day's limit does not.
    const over = payoutInput(user.id, 50_000);
    const refused = responseOf(await createPayout(over));
    expect(refused).toMatchObject({
      status: 422,
      body: { code: "payout_limit_exceeded", dailyLimitMinor: DAILY_LIMIT_MINOR },
    });
    expect(await balanceOf(user.id)).toBe(90_000);
    // The bank fails the first payout; the reconciler reads it and gives the hold and the day's share back.
    const failed = await waitForBankPayout(bank.url, payoutMerchantRefFor(user.id, failing.refId), "failed");
    await reconcileOnce(passOptions(proxy.url, [user.id]));
    expect(await payoutRow(user.id, failing.refId)).toMatchObject({
      status: "failed",
      failureReason: "declined_by_bank",
    });
    expect(await limitUsedToday(user.id)).toBe(0);
    expect(await balanceOf(user.id)).toBe(150_000);
    // Told again (a payout.failed delivery after the reconciler): nothing more comes back.
    expect(await deliverPayoutEvent("payout.failed", failed, `evt_failed_${failing.refId}`)).toEqual({
      kind: "received",
      outcome: "duplicate",
    });
    expect(await limitUsedToday(user.id)).toBe(0);
    expect(await balanceOf(user.id)).toBe(150_000);
    expect(await transactionsOf(user.id, "release")).toBe(1);
    // The refused key stays refused (its stored answer); a new key for the same amount now fits.
    expect(responseOf(await createPayout(over)).text).toBe(refused.text);
    expect(responseOf(await createPayout(payoutInput(user.id, 50_000))).status).toBe(201);
    expect(await limitUsedToday(user.id)).toBe(50_000);
  });

  it("the limit is decided under the wallet's lock: claims at the limit's edge hold at most the limit", async () => {
    const user = await createTestUser();
    await succeededTopup(user.id, 10_000);
    const outcomes = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        claimPayout(payoutClaimRequest(user.id, freshRefId(`edge${i}`), 1000, 2500), testPool()),
      ),
    );
    expect(outcomes.filter((o) => o.kind === "held")).toHaveLength(2);
    const refused = outcomes.filter((o) => o.kind === "stored_refusal");
    expect(refused).toHaveLength(3);
    for (const o of refused) expect(o.kind === "stored_refusal" && o.entry.failureReason).toBe("payout_limit_exceeded");
    expect(await limitUsedToday(user.id)).toBe(2000);
    expect(await balanceOf(user.id)).toBe(8000);
  });
});

/**
 * A payout's claim and another payout's release of the same user, staged in a scratch database (migrated from the
 * real files; `releaseText` replaces ledger_release_reservation when given): a test session holds the wallet, the
 * claim queues on it first, then the release (which has moved its row) queues behind it; the holder lets go. Each
 * statement runs on a plain connection, without the app's retry, so a deadlock shows as the 40P01 it is.
 */
async function claimMeetsRelease(releaseText?: string): Promise<PromiseSettledResult<unknown>[]> {
  const url = await createScratchDatabase("payout_lock_order");
  await migrate(url);
  const admin = new pg.Client({ connectionString: url });
  const [claimer, releaser] = [0, 1].map(() => new pg.Client({ connectionString: url }));
  await Promise.all([admin, claimer!, releaser!].map((c) => c.connect()));
  try {
    if (releaseText) await admin.query(releaseText);
    await admin.query(`INSERT INTO "user" (id, name, email, role) VALUES ('u1', 'u1', 'u1@example.test', 'user')`);
    await admin.query("INSERT INTO wallets (user_id, balance_minor, currency) VALUES ('u1', 10000, 'USD')");
    const first = await claimPayout(payoutClaimRequest("u1", "first", 1000, DAILY_LIMIT_MINOR), admin);
    if (first.kind !== "held") throw new Error(`the first payout was not held: ${first.kind}`);
    await admin.query("BEGIN");
    await admin.query("SELECT 1 FROM wallets WHERE user_id = 'u1' FOR UPDATE");
    const holder = await backendPid(admin);
    const claim = claimPayout(payoutClaimRequest("u1", "second", 1000, DAILY_LIMIT_MINOR), claimer!);
    await waitForBlockedSessions({ blockedBy: holder }, 1);
    const release = releaseReservation(
      { userId: "u1", entryId: first.entry.id },
      { actor: "webhook", detail: "test: the bank failed it" },
      releaser!,
    );
    await waitForBlockedSessions({ blockedBy: holder }, 2);
    const settled = Promise.allSettled([claim, release]);
    await admin.query("COMMIT");
    return await settled;
  } finally {
    await Promise.all([admin, claimer!, releaser!].map((c) => c.end().catch(() => undefined)));
  }
}

describe("payouts: the lock order of a claim and a release", () => {
  it("a payout claimed while another payout of the same user is given back: both finish, no deadlock", async () => {
    const results = await claimMeetsRelease();
    expect(results.map((r) => (r.status === "rejected" ? String(r.reason) : "ok"))).toEqual(["ok", "ok"]);
  });

  it("negative control: a release that gives the day's limit back before the wallet deadlocks with the claim (40P01)", async () => {
    // The real file's text with the payout's limit statement moved before the wallet's credit (the claim's order reversed).
    const text = functionDefinition("ledger_release_reservation");
    const limit = /\n {2}IF entry\.type = 'payout' THEN\n {4}UPDATE payout_limit_days[\s\S]*?END IF;/.exec(text)?.[0];
    const credit = "\n  SELECT w.balance_minor INTO balance_minor";
    if (!limit || !text.includes(credit))
      throw new Error("ledger_release_reservation no longer says what the control moves");
    const limitFirst = text.replace(limit, "").replace(credit, `${limit}${credit}`);
    const results = await claimMeetsRelease(limitFirst);
    const codes = results.map((r) => (r.status === "rejected" ? (r.reason as { code?: string }).code : "ok"));
    expect(codes).toContain("40P01");
  });
});

describe("payouts: held money cannot be spent", () => {
  it("a payment racing a payout for the whole balance: exactly one of them gets it", async () => {
    const user = await createTestUser();
    await succeededTopup(user.id, 1000);
    const holder = await lockWallet(user.id);
    const payout = createPayout(payoutInput(user.id, 1000));
    const payment = createPayment({ userId: user.id, orderId: freshRefId("o"), amountMinor: 1000, currency: "USD" });
    await waitForBlockedSessions({ blockedBy: holder.pid }, 2);
    await holder.release();
    const [paidOut, paid] = [responseOf(await payout), responseOf(await payment)];
    expect([paidOut.status, paid.status].sort()).toEqual([201, 402]);
    expect(await balanceOf(user.id)).toBe(0);
  });

  it("a payment while a payout is held (processing at the bank) is refused: the held money is not the wallet's", async () => {
    const user = await createTestUser();
    await succeededTopup(user.id, 1000);
    const held = responseOf(await createPayout(payoutInput(user.id, 1000)));
    expect(held.body.payout.status).toBe("processing");
    const later = responseOf(
      await createPayment({ userId: user.id, orderId: freshRefId("o"), amountMinor: 1, currency: "USD" }),
    );
    expect(later).toMatchObject({ status: 402, body: { code: "insufficient_funds" } });
    expect(await balanceOf(user.id)).toBe(0);
  });
});
