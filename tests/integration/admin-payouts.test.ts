/**
 * The admin side of payouts (contract section 14) against a real PostgreSQL and sandbox bank: the list of every
 * user's payouts (newest first, by state, paged without repeats), what needs a person (a flagged payout first, then one
 * whose outcome has been unknown for long with its money held, then a returned one with the bank's reason; a fresh
 * processing payout and a paid one are not listed: negative controls), the payout webhook anomalies, and a payout's
 * timeline (its transitions, its postings, its webhook deliveries and its return), whoever's payout it is.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getPayoutTimeline } from "@/lib/admin/get-payout-timeline";
import { listAdminPayouts, type AdminPayoutView } from "@/lib/admin/list-admin-payouts";
import { listWebhookAnomalies } from "@/lib/admin/list-webhook-anomalies";
import { listPayoutsNeedingAttention } from "@/lib/admin/list-payouts-needing-attention";
import { STUCK_AGE_MS } from "@/lib/admin/stuck";
import { payoutMerchantRefFor } from "@/lib/bank/merchant-ref";
import type { BankPayout } from "@/lib/bank/payouts-client";
import { findEntryByKey } from "@/lib/ledger/claim";
import { operationKey } from "@/lib/ledger/keys";
import { recordSettleFailure } from "@/lib/ledger/transitions";
import { createPayout } from "@/lib/payouts/create-payout";
import { createTestUser, testPool, type TestUser } from "../helpers/db";
import { freshRefId } from "../helpers/ledger";
import { DESTINATION, deliverPayoutEvent, startPayoutBank, waitForBankPayout } from "./payout-fixtures";
import type { TestBank } from "./reconciler-fixtures";
import { succeededTopup } from "./refund-fixtures";

let bank: TestBank;
const savedBankUrl = process.env.BANK_URL;

beforeAll(async () => {
  // Payouts settle 30 ms after they are made; a returned one comes back 200 ms after it was paid. The bank's own
  // webhooks go to a closed port: only this file delivers events.
  bank = await startPayoutBank({ settleDelayMs: 30, returnDelayMs: 200 });
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
  if (savedBankUrl === undefined) delete process.env.BANK_URL;
  else process.env.BANK_URL = savedBankUrl;
});

/** Withdraws `amountMinor` of `user`'s wallet under `refId` through the real operation; returns the row. */
async function payout(user: TestUser, amountMinor: number, refId: string) {
  const result = await createPayout({ userId: user.id, refId, amountMinor, currency: "USD", destination: DESTINATION });
  if (result.kind !== "response") throw new Error(`payout not answered: ${JSON.stringify(result)}`);
  const row = await findEntryByKey(operationKey(user.id, "payout", refId));
  if (!row) throw new Error(`no payout row ${refId}`);
  return row;
}

/** A payout the bank paid, its `payout.paid` event delivered `deliveries` times (the same event id). */
async function paidPayout(user: TestUser, amountMinor: number) {
  const refId = freshRefId("adm-po-paid");
  await payout(user, amountMinor, refId);
  const paid = await waitForBankPayout(bank.url, payoutMerchantRefFor(user.id, refId), "paid");
  const eventId = `evt_admin_paid_${refId}`;
  expect(await deliverPayoutEvent("payout.paid", paid, eventId)).toEqual({ kind: "received", outcome: "payout_paid" });
  expect(await deliverPayoutEvent("payout.paid", paid, eventId)).toEqual({ kind: "received", outcome: "duplicate" });
  return { refId, paid };
}

/** A payout the bank answered 503 for, aged past the stuck age: processing, its money held, nobody's word yet. */
async function stuckPayout(user: TestUser, amountMinor: number) {
  const refId = freshRefId("sbx-po-5xx-adm");
  const row = await payout(user, amountMinor, refId);
  expect(row.status).toBe("processing");
  // Test setup: the row was claimed longer ago than the stuck age (instead of waiting five minutes).
  await testPool().query(
    "UPDATE ledger_entries SET created_at = now() - $3::int * interval '1 millisecond' WHERE user_id = $1 AND id = $2",
    [user.id, row.id, STUCK_AGE_MS + 60_000],
  );
  return refId;
}

/** A payout whose settlement failed three times (SETTLE_ATTEMPTS_MAX here), flagged, its outcome still unknown. */
async function flaggedPayout(user: TestUser, amountMinor: number) {
  const refId = freshRefId("sbx-po-5xx-flag");
  const row = await payout(user, amountMinor, refId);
  const ref = { userId: user.id, entryId: row.id };
  for (let i = 1; i <= 3; i++) await recordSettleFailure(ref, `database refused the settlement (${i})`, 3);
  return refId;
}

/** A payout paid and then returned by the receiving bank, its return delivered as the bank's event. */
async function returnedPayout(user: TestUser, amountMinor: number) {
  const refId = freshRefId("sbx-po-return-adm");
  await payout(user, amountMinor, refId);
  const returned = await waitForBankPayout(bank.url, payoutMerchantRefFor(user.id, refId), "returned");
  expect(await deliverPayoutEvent("payout.returned", returned, `evt_admin_returned_${refId}`)).toEqual({
    kind: "received",
    outcome: "payout_returned",
  });
  return { refId, returned };
}

/** Every page of the admin list for `status`, in order (bounded: 100 pages of 100). */
async function wholeList(status?: AdminPayoutView["status"]): Promise<AdminPayoutView[]> {
  const rows: AdminPayoutView[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await listAdminPayouts({ status, limit: 100, cursor });
    if (!result.ok) throw new Error(result.detail);
    rows.push(...result.items);
    if (result.nextCursor === null) return rows;
    cursor = result.nextCursor;
  }
  throw new Error("more than 100 pages of payouts");
}

describe("admin payouts", () => {
  let owner: TestUser;
  let other: TestUser;
  const refs = {} as Record<"paid" | "stuck" | "flagged" | "returned" | "fresh" | "refused", string>;
  let returnedPayoutId: string;

  beforeAll(async () => {
    owner = await createTestUser();
    other = await createTestUser();
    await succeededTopup(owner.id, 50_000);
    await succeededTopup(other.id, 50_000);
    refs.paid = (await paidPayout(owner, 1200)).refId;
    refs.stuck = await stuckPayout(owner, 1300);
    refs.flagged = await flaggedPayout(other, 1400);
    const returned = await returnedPayout(other, 1500);
    refs.returned = returned.refId;
    returnedPayoutId = returned.returned.id;
    // Negative controls: processing but fresh (the bank has not answered for seconds only), and refused at the claim.
    refs.fresh = freshRefId("sbx-po-5xx-fresh");
    expect((await payout(owner, 1600, refs.fresh)).status).toBe("processing");
    refs.refused = freshRefId("adm-po-refused");
    const refused = await payout(owner, 10_000_000, refs.refused);
    expect(refused).toMatchObject({ status: "failed", failureReason: "insufficient_funds" });
  }, 60_000);

  it("needs attention: the flagged payout first, then the one the bank has not answered for long, then the return", async () => {
    const mine = (await listPayoutsNeedingAttention(100)).filter((row) => [owner.id, other.id].includes(row.userId));
    expect(mine.map((row) => [row.refId, row.why])).toEqual([
      [refs.flagged, "flagged"],
      [refs.stuck, "stuck"],
      [refs.returned, "returned"],
    ]);
    const [flagged, stuck, returned] = mine;
    expect(flagged).toMatchObject({
      userEmail: other.email,
      status: "processing",
      settleFailures: 3,
      settleLastError: "database refused the settlement (3)",
    });
    expect(Date.parse(flagged!.settleFlaggedAt!)).toBeGreaterThan(0);
    // Outcome unknown: still processing, never failed on a timer.
    expect(stuck).toMatchObject({ userEmail: owner.email, status: "processing", amount: 1300, failureReason: null });
    expect(returned).toMatchObject({ status: "succeeded", payoutId: returnedPayoutId });
    expect(returned!.returnDetail).toContain("returned by the bank (account_closed");
    expect(Date.parse(returned!.returnedAt!)).toBeGreaterThan(0);
  });

  it("lists every user's payouts newest first, each once across pages, and filters by state", async () => {
    const all = await wholeList();
    const keys = all.map((row) => `${row.userId}:${row.refId}`);
    expect(new Set(keys).size).toBe(keys.length);
    const mine = all.filter((row) => [owner.id, other.id].includes(row.userId)).map((row) => row.refId);
    // Created in this order, listed newest first (the stuck one was backdated past the stuck age).
    expect(mine).toEqual([refs.refused, refs.fresh, refs.returned, refs.flagged, refs.paid, refs.stuck]);
    for (let i = 1; i < all.length; i++)
      expect(Date.parse(all[i - 1]!.createdAt)).toBeGreaterThanOrEqual(Date.parse(all[i]!.createdAt));
    const returned = all.find((row) => row.refId === refs.returned)!;
    expect(returned).toMatchObject({ userEmail: other.email, status: "succeeded", destination: DESTINATION });
    expect(returned.returnedAt).not.toBeNull();
    expect(all.find((row) => row.refId === refs.paid)).toMatchObject({ returnedAt: null, status: "succeeded" });

    const failed = (await wholeList("failed")).map((row) => row.refId);
    expect(failed).toContain(refs.refused);
    expect(failed).not.toContain(refs.paid);
    // Two rows a page: the second page continues the first; a cursor of another state's list is refused.
    const first = await listAdminPayouts({ limit: 2 });
    if (!first.ok || first.nextCursor === null) throw new Error("expected a second page");
    const second = await listAdminPayouts({ limit: 2, cursor: first.nextCursor });
    expect(second.ok && second.items.map((row) => row.refId)).toEqual(all.slice(2, 4).map((row) => row.refId));
    expect(await listAdminPayouts({ status: "failed", cursor: first.nextCursor })).toMatchObject({ ok: false });
  });

  it("a paid payout's timeline: its transitions, the hold and its settlement, and its webhook deliveries", async () => {
    const timeline = await getPayoutTimeline(owner.id, refs.paid);
    if (!timeline) throw new Error("no timeline");
    expect(timeline.payout).toMatchObject({ userEmail: owner.email, status: "succeeded", amount: 1200 });
    expect(timeline.payout.payoutId).toMatch(/^po_/);
    expect(timeline.merchantRef).toBe(payoutMerchantRefFor(owner.id, refs.paid));
    expect(timeline.transitions.map((t) => [t.from, t.to, t.actor])).toEqual([
      [null, "initiated", "request"],
      ["initiated", "processing", "request"],
      ["processing", "succeeded", "webhook"],
    ]);
    expect(timeline.postings.map((p) => [p.event, p.account, p.amountMinor]).sort()).toEqual(
      [
        ["reserve", "payouts_in_flight", 1200],
        ["reserve", "wallet", -1200],
        ["settle", "bank_clearing", 1200],
        ["settle", "payouts_in_flight", -1200],
      ].sort(),
    );
    // One event delivered twice: one line, two deliveries, the outcome of the delivery that applied it.
    expect(timeline.webhooks).toHaveLength(1);
    expect(timeline.webhooks[0]).toMatchObject({
      type: "payout.paid",
      chargeId: timeline.payout.payoutId,
      outcome: "payout_paid",
      deliveries: 2,
    });
    expect(timeline.returned).toBeNull();
    expect(timeline.response?.status).toBe(201);
  });

  it("another user's returned payout: the return entry, its reason, its credit back to the wallet", async () => {
    const timeline = await getPayoutTimeline(other.id, refs.returned);
    if (!timeline) throw new Error("no timeline");
    expect(timeline.payout.userEmail).toBe(other.email);
    expect(timeline.returned).toMatchObject({ refId: refs.returned, amount: 1500, status: "succeeded" });
    expect(timeline.returned!.payoutId).toBe(returnedPayoutId);
    expect(timeline.returned!.transitions.at(-1)!.detail).toContain("account_closed");
    expect(timeline.returned!.postings.map((p) => [p.account, p.amountMinor]).sort()).toEqual(
      [
        ["bank_clearing", -1500],
        ["wallet", 1500],
      ].sort(),
    );
    expect(timeline.webhooks.map((w) => w.outcome)).toEqual(["payout_returned"]);
  });

  it("a refused payout's timeline has no postings; an unknown or malformed key has no timeline", async () => {
    const refused = await getPayoutTimeline(owner.id, refs.refused);
    expect(refused?.payout).toMatchObject({ status: "failed", failureReason: "insufficient_funds" });
    expect(refused?.postings).toEqual([]);
    expect(await getPayoutTimeline(owner.id, "no-such-payout")).toBeNull();
    expect(await getPayoutTimeline(owner.id, "bad ref")).toBeNull();
    expect(await getPayoutTimeline("bad:user", refs.paid)).toBeNull();
  });

  it("a payout event for no payout is listed among the payout webhook anomalies", async () => {
    const merchantRef = payoutMerchantRefFor(owner.id, freshRefId("adm-po-ghost"));
    const ghost = {
      id: "po_ghost_admin",
      merchantRef,
      amount: 700,
      currency: "USD",
      destination: DESTINATION,
      status: "paid",
    } as BankPayout;
    const eventId = `evt_admin_ghost_${merchantRef}`;
    expect(await deliverPayoutEvent("payout.paid", ghost, eventId)).toEqual({
      kind: "received",
      outcome: "anomaly_unknown_merchant_ref",
    });
    const listed = (await listWebhookAnomalies(undefined, { payoutsOnly: true })).find((a) => a.eventId === eventId);
    expect(listed).toMatchObject({ merchantRef, outcome: "anomaly_unknown_merchant_ref", chargeId: "po_ghost_admin" });
    // A charge's anomaly is the admin home's, not the payouts page's.
    const chargeEventId = `evt_admin_charge_${merchantRef}`;
    await testPool().query(
      `INSERT INTO bank_webhook_events (event_id, type, merchant_ref, charge_id, amount_minor, currency, outcome, payload)
       VALUES ($1, 'charge.succeeded', 'topup:nobody:x', 'ch_ghost', 700, 'USD', 'anomaly_unknown_merchant_ref', '{}')`,
      [chargeEventId],
    );
    const ids = async (payoutsOnly: boolean) =>
      (await listWebhookAnomalies(undefined, { payoutsOnly })).map((a) => a.eventId);
    expect(await ids(true)).not.toContain(chargeEventId);
    expect(await ids(false)).toEqual(expect.arrayContaining([chargeEventId, eventId]));
  });
});
