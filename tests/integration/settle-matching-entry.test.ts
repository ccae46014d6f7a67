/**
 * The bank's signed success applied in one statement, the webhook's common case (contract sections 2, 5 and 14, case
 * C19, docs/decisions/064): webhook_settle_entry settles the matching unfinished top-up (credited) or payout (its hold
 * posted to the bank's clearing) through ledger_settle_matching_entry, then the ledger's one guarded move,
 * ledger_move_entry, and records the event in the same commit. Each guard is shown to refuse what it must, writing
 * nothing, not even the event's record; a staged race settles once; and copies of the functions with a guard removed
 * (taken from their files, in a rolled-back transaction) let through what the real ones refuse (negative controls).
 * Real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import {
  attachCharge,
  completeEntry,
  failEntry,
  getEntryById,
  markProcessing,
  storeResponse,
} from "../../lib/ledger/transitions";
import { createTestUser, testPool } from "../helpers/db";
import { functionDefinition } from "../helpers/function-files";
import { balanceOf, claimEntry, claimRequest, dedicatedClient, freshRefId, transitionsOf } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";
import { claimPayout } from "../../lib/ledger/payouts";
import { releaseReservation } from "../../lib/ledger/refunds";
import { settleFromWebhook } from "../../lib/ledger/webhook-settlement";
import { journalEventsOf, payoutClaimRequest } from "./payout-fixtures";
import { backendPid } from "./reconciler-fixtures";

/** What a signed success reports about a top-up's charge: its id, amount (minor units) and currency. */
interface ReportedCharge {
  readonly chargeId: string;
  readonly amountMinor: number;
  readonly currency: string;
}

type Db = Pick<pg.ClientBase, "query">;

/**
 * webhook_settle_entry on `db` for `key` and `reported`, as the webhook calls it, under a fresh event id: a
 * `charge.succeeded` for a top-up (the default), a `payout.paid` for a payout. Returns the settled row's id, the status
 * it left and the new balance (null for a payout; `moved` null when nothing was written) and the event id.
 */
async function creditThrough(
  key: { userId: string; refId: string },
  reported: ReportedCharge,
  db: Db = testPool(),
  entryType: "topup" | "payout" = "topup",
): Promise<{ moved: { id: number; fromStatus: string; balanceMinor: number | null } | null; eventId: string }> {
  const eventId = `evt_test_${randomUUID()}`;
  const result = await db.query(
    `SELECT (c.entry).id, c.from_status, c.balance_minor
       FROM webhook_settle_entry(
              p_entry_type => $7, p_user_id => $1, p_ref_id => $2, p_event_id => $3, p_type => $8,
              p_merchant_ref => $7 || ':' || $1 || ':' || $2, p_bank_id => $4, p_amount_minor => $5::bigint,
              p_currency => $6, p_payload => '{}') AS c`,
    [
      key.userId,
      key.refId,
      eventId,
      reported.chargeId,
      reported.amountMinor,
      reported.currency,
      entryType,
      entryType === "topup" ? "charge.succeeded" : "payout.paid",
    ],
  );
  const row = result.rows[0];
  const balanceMinor = row?.balance_minor === null ? null : Number(row?.balance_minor);
  return { moved: row ? { id: Number(row.id), fromStatus: row.from_status, balanceMinor } : null, eventId };
}

async function eventRows(eventId: string): Promise<number> {
  const result = await testPool().query("SELECT 1 FROM bank_webhook_events WHERE event_id = $1", [eventId]);
  return result.rowCount ?? 0;
}

/** A claimed top-up row, moved to `processing` as the request leaves it before the bank's answer. */
async function processingTopup(userId: string, amountMinor = 1000) {
  const refId = freshRefId("cmt");
  const claim = await claimEntry(claimRequest(userId, { refId, amountMinor }));
  const ref = { userId, entryId: claim.id };
  await markProcessing(ref, claim.fencingToken);
  return { key: { userId, refId }, ref, fencingToken: claim.fencingToken };
}

const charge = (overrides: Partial<ReportedCharge> = {}): ReportedCharge => ({
  chargeId: `ch_${randomUUID()}`,
  amountMinor: 1000,
  currency: "USD",
  ...overrides,
});

describe("webhook_settle_entry: a top-up", () => {
  it("moves the unfinished top-up to succeeded with its charge id, its credit, its audit row and the event's record, in one commit", async () => {
    const user = await createTestUser();
    const { key, ref } = await processingTopup(user.id, 2500);
    const reported = charge({ amountMinor: 2500 });
    const { moved, eventId } = await creditThrough(key, reported);
    expect(moved).toEqual({ id: ref.entryId, fromStatus: "processing", balanceMinor: 2500 });
    expect(await getEntryById(ref)).toMatchObject({
      status: "succeeded",
      bankChargeId: reported.chargeId,
      failureReason: null,
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    expect(await balanceOf(user.id)).toBe(2500);
    expect(await eventRows(eventId)).toBe(1);
    expect((await transitionsOf(user.id, ref.entryId)).at(-1)).toEqual({
      from: "processing",
      to: "succeeded",
      actor: "webhook",
      fencingToken: 1,
    });
    const detail = await testPool().query(
      "SELECT detail FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 AND to_status = 'succeeded'",
      [user.id, ref.entryId],
    );
    expect(detail.rows[0]?.detail).toBe(`webhook: charge.succeeded ${eventId}`);
    const recorded = await testPool().query("SELECT outcome, deliveries FROM bank_webhook_events WHERE event_id = $1", [
      eventId,
    ]);
    expect(recorded.rows).toEqual([{ outcome: "credited", deliveries: 1 }]);
  });

  it("credits a row that already records this charge id (a pending answer came first), and repays a debt first", async () => {
    const user = await createTestUser();
    await testPool().query(
      "INSERT INTO wallets (user_id, balance_minor, debt_minor, currency) VALUES ($1, 0, 300, 'USD')",
      [user.id],
    );
    const { key, ref } = await processingTopup(user.id);
    const reported = charge();
    await attachCharge(ref, reported.chargeId);
    const { moved } = await creditThrough(key, reported);
    expect(moved).toMatchObject({ balanceMinor: 700 });
    expect((await getEntryById(ref))?.bankChargeId).toBe(reported.chargeId);
    const wallet = await testPool().query("SELECT balance_minor, debt_minor FROM wallets WHERE user_id = $1", [
      user.id,
    ]);
    expect(wallet.rows[0]).toEqual({ balance_minor: 700, debt_minor: 0 });
  });

  it("writes nothing, the event's record included, for a charge that disagrees with the row or a row that is not an unfinished top-up", async () => {
    const user = await createTestUser();
    const cases: { why: string; key: { userId: string; refId: string }; reported: ReportedCharge }[] = [];
    const amount = await processingTopup(user.id);
    cases.push({ why: "other amount", key: amount.key, reported: charge({ amountMinor: 999 }) });
    const currency = await processingTopup(user.id);
    cases.push({ why: "other currency", key: currency.key, reported: charge({ currency: "EUR" }) });
    const otherCharge = await processingTopup(user.id);
    await attachCharge(otherCharge.ref, "ch_recorded");
    cases.push({ why: "other charge id", key: otherCharge.key, reported: charge({ chargeId: "ch_reported" }) });
    const succeeded = await processingTopup(user.id);
    await completeEntry(succeeded.ref, { actor: "request", guard: { kind: "status_only" }, credit: true });
    cases.push({ why: "succeeded row", key: succeeded.key, reported: charge() });
    const failed = await processingTopup(user.id);
    await failEntry(failed.ref, { actor: "request", guard: { kind: "status_only" }, reason: "declined_by_bank" });
    cases.push({ why: "failed row", key: failed.key, reported: charge() });
    cases.push({ why: "no row", key: { userId: user.id, refId: freshRefId("none") }, reported: charge() });
    const payment = await claimEntry(claimRequest(user.id, { type: "payment", refId: freshRefId("pay") }));
    cases.push({ why: "a payment's ref id", key: { userId: user.id, refId: payment.refId }, reported: charge() });
    const balanceBefore = await balanceOf(user.id);

    const results = [];
    for (const { why, key, reported } of cases) {
      const { moved, eventId } = await creditThrough(key, reported);
      results.push({ why, moved, events: await eventRows(eventId) });
    }
    expect(results).toEqual(cases.map(({ why }) => ({ why, moved: null, events: 0 })));
    expect(await balanceOf(user.id)).toBe(balanceBefore);
    expect((await getEntryById(amount.ref))?.status).toBe("processing");
    expect((await getEntryById(otherCharge.ref))?.bankChargeId).toBe("ch_recorded");
    expect((await getEntryById(failed.ref))?.status).toBe("failed");
  });

  it("two deliveries released at once behind a held row lock: one credit, one event recorded; the other gets null", async () => {
    const user = await createTestUser();
    const { key, ref } = await processingTopup(user.id);
    const reported = charge();
    const holder = await dedicatedClient("cmt-holder");
    try {
      await holder.query("BEGIN");
      await holder.query("SELECT 1 FROM ledger_entries WHERE user_id = $1 AND id = $2 FOR UPDATE", [
        user.id,
        ref.entryId,
      ]);
      const racing = [0, 1].map(() => creditThrough(key, reported));
      await waitForBlockedSessions({ blockedBy: await backendPid(holder) }, 2, 10_000);
      await holder.query("COMMIT");
      const results = await Promise.all(racing);
      expect(results.map((r) => (r.moved ? "moved" : null)).sort()).toEqual(["moved", null]);
      expect((await Promise.all(results.map(({ eventId }) => eventRows(eventId)))).sort()).toEqual([0, 1]);
      expect(await balanceOf(user.id)).toBe(1000);
    } finally {
      await holder.end();
    }
  });
});

/** A payout of `amountMinor` claimed and held (born `processing`), its wallet funded with `fundedMinor` first. */
async function processingPayout(userId: string, amountMinor: number, fundedMinor = 5000) {
  await testPool().query("INSERT INTO wallets (user_id, balance_minor, currency) VALUES ($1, $2, 'USD')", [
    userId,
    fundedMinor,
  ]);
  const refId = freshRefId("smp");
  const claimed = await claimPayout(payoutClaimRequest(userId, refId, amountMinor, 1_000_000), testPool());
  if (claimed.kind !== "held") throw new Error(`payout not held: ${claimed.kind}`);
  return { key: { userId, refId }, ref: { userId, entryId: claimed.entry.id } };
}

describe("webhook_settle_entry: a payout (docs/decisions/064)", () => {
  it("posts the held payout to the bank's clearing with its payout id, credits nothing, records payout_paid", async () => {
    const user = await createTestUser();
    const { key, ref } = await processingPayout(user.id, 1200);
    expect(await balanceOf(user.id)).toBe(3800);
    const reported = charge({ chargeId: `po_${randomUUID()}`, amountMinor: 1200 });
    const { moved, eventId } = await creditThrough(key, reported, testPool(), "payout");
    expect(moved).toEqual({ id: ref.entryId, fromStatus: "processing", balanceMinor: null });
    expect(await getEntryById(ref)).toMatchObject({ status: "succeeded", bankChargeId: reported.chargeId });
    expect(await balanceOf(user.id)).toBe(3800);
    expect(await journalEventsOf(user.id, ref.entryId)).toEqual(["reserve", "settle"]);
    const recorded = await testPool().query("SELECT outcome, type FROM bank_webhook_events WHERE event_id = $1", [
      eventId,
    ]);
    expect(recorded.rows).toEqual([{ outcome: "payout_paid", type: "payout.paid" }]);
    // A second delivery finds the row terminal: nothing written, the webhook takes the long way.
    expect((await creditThrough(key, reported, testPool(), "payout")).moved).toBeNull();
    expect(await journalEventsOf(user.id, ref.entryId)).toEqual(["reserve", "settle"]);
  });

  it("settleFromWebhook names the settled payout and whether its first response is still to be stored", async () => {
    const user = await createTestUser();
    const { key, ref } = await processingPayout(user.id, 900);
    const success = (bankId: string) => ({
      entryType: "payout" as const,
      userId: user.id,
      refId: key.refId,
      eventId: `evt_test_${randomUUID()}`,
      eventType: "payout.paid",
      merchantRef: `payout:${user.id}:${key.refId}`,
      bankId,
      amountMinor: 900,
      currency: "USD",
      payload: "{}",
    });
    // Born processing without a response: its request's reply never came, so the webhook stores it.
    expect(await settleFromWebhook(success("po_lost_reply"))).toEqual({ entryId: ref.entryId, responseMissing: true });
    const other = await processingPayout((await createTestUser()).id, 900);
    await storeResponse(other.ref, { status: 201, body: "{}" });
    const answered = { ...success("po_answered"), userId: other.key.userId, refId: other.key.refId };
    expect(await settleFromWebhook(answered)).toEqual({ entryId: other.ref.entryId, responseMissing: false });
    expect(await settleFromWebhook(answered)).toBeNull();
  });

  it("writes nothing for a payout.paid of another amount, payout id or currency, or for a failed payout", async () => {
    const user = await createTestUser();
    const { key, ref } = await processingPayout(user.id, 1000, 10_000);
    await attachCharge(ref, "po_recorded");
    const reports = [
      charge({ chargeId: "po_recorded", amountMinor: 999 }),
      charge({ chargeId: "po_recorded", currency: "EUR" }),
      charge({ chargeId: "po_other" }),
    ];
    for (const reported of reports) {
      const { moved, eventId } = await creditThrough(key, reported, testPool(), "payout");
      expect({ moved, events: await eventRows(eventId) }).toEqual({ moved: null, events: 0 });
    }
    expect(await getEntryById(ref)).toMatchObject({ status: "processing", bankChargeId: "po_recorded" });
    // A payout the bank failed gave its hold back; a later success for it is the long way's to judge (an anomaly).
    const other = await createTestUser();
    const failed = await processingPayout(other.id, 1000);
    expect((await releaseReservation(failed.ref, { actor: "webhook", detail: "test: failed" })).kind).toBe("released");
    const { moved, eventId } = await creditThrough(failed.key, charge(), testPool(), "payout");
    expect({ moved, events: await eventRows(eventId), balance: await balanceOf(other.id) }).toEqual({
      moved: null,
      events: 0,
      balance: 5000,
    });
  });

  it("refuses every entry type but a top-up and a payout (22023): nothing else is settled by a bank success", async () => {
    const user = await createTestUser();
    const payment = await claimEntry(claimRequest(user.id, { type: "payment", refId: freshRefId("pay") }));
    await expect(
      testPool().query(
        `SELECT * FROM ledger_settle_matching_entry(p_user_id => $1, p_entry_type => 'payment', p_ref_id => $2,
           p_bank_id => 'ch_x', p_amount_minor => 1000, p_currency => 'USD', p_actor => 'webhook', p_detail => NULL)`,
        [user.id, payment.refId],
      ),
    ).rejects.toMatchObject({ code: "22023" });
  });
});

describe("negative controls: a copy of a function with a guard removed lets through what the real one refuses", () => {
  /**
   * Credits through webhook_settle_entry on a client where function `name` is replaced, for this transaction only, by
   * its file's text with `guard` replaced by `standIn` (checked to have happened); rolled back afterwards, with every
   * write the credit made. Returns whether it credited, and the balance it left (read inside the transaction).
   */
  async function creditThroughBroken(
    [name, guard, standIn]: readonly [string, string, string],
    key: { userId: string; refId: string },
    reported: ReportedCharge,
    alsoBroken?: string,
    entryType: "topup" | "payout" = "topup",
  ): Promise<{ credited: boolean; balanceMinor: number }> {
    const client = await testPool().connect();
    try {
      await client.query("BEGIN");
      const real = functionDefinition(name);
      const broken = real.replace(guard, standIn);
      expect(broken).not.toBe(real);
      await client.query(broken);
      if (alsoBroken) await client.query(alsoBroken);
      const { moved } = await creditThrough(key, reported, client, entryType);
      const balance = await client.query<{ b: string }>(
        "SELECT balance_minor::text AS b FROM wallets WHERE user_id = $1",
        [key.userId],
      );
      return { credited: moved !== null, balanceMinor: Number(balance.rows[0]?.b ?? 0) };
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  }

  it("without the state machine's guard, a second success of a succeeded row is refused by the books' key; without both, it credits again", async () => {
    const user = await createTestUser();
    const { key } = await processingTopup(user.id);
    const reported = charge();
    expect((await creditThrough(key, reported)).moved).not.toBeNull();
    expect((await creditThrough(key, reported)).moved).toBeNull();
    const guard = `     AND ((p_to_status = 'processing' AND e.status = 'initiated')
          OR (p_to_status IN ('succeeded', 'failed') AND e.status IN ('initiated', 'processing')))`;
    // The books' key refuses a second journal transaction for the entry's move: the guard behind this guard.
    await expect(creditThroughBroken(["ledger_move_entry", guard, ""], key, reported)).rejects.toMatchObject({
      code: "23505",
      constraint: "ledger_postings_pkey",
    });
    // Without both, the row is credited again (the key dropped in this transaction only, rolled back with it).
    const withoutBooksKey = "ALTER TABLE ledger_postings DROP CONSTRAINT ledger_postings_pkey";
    expect(await creditThroughBroken(["ledger_move_entry", guard, ""], key, reported, withoutBooksKey)).toEqual({
      credited: true,
      balanceMinor: 2000,
    });
    expect(await balanceOf(user.id)).toBe(1000);
  });

  it("without the amount guard, a charge of another amount credits the row", async () => {
    const user = await createTestUser();
    const { key } = await processingTopup(user.id);
    const broken = ["ledger_settle_matching_entry", "v_entry.amount_minor <> p_amount_minor OR ", ""] as const;
    expect((await creditThrough(key, charge({ amountMinor: 5 }))).moved).toBeNull();
    expect(await creditThroughBroken(broken, key, charge({ amountMinor: 5 }))).toMatchObject({ credited: true });
  });

  it("without the currency guard, a charge in another currency credits the row", async () => {
    const user = await createTestUser();
    const { key } = await processingTopup(user.id);
    const guard = ["ledger_settle_matching_entry", " OR v_entry.currency <> p_currency", ""] as const;
    expect((await creditThrough(key, charge({ currency: "EUR" }))).moved).toBeNull();
    expect(await creditThroughBroken(guard, key, charge({ currency: "EUR" }))).toMatchObject({ credited: true });
  });

  it("without the charge id guard, another charge replaces the recorded one and credits", async () => {
    const user = await createTestUser();
    const { key, ref } = await processingTopup(user.id);
    await attachCharge(ref, "ch_recorded");
    const guard = [
      "ledger_settle_matching_entry",
      "\n     OR (v_entry.bank_charge_id IS NOT NULL AND v_entry.bank_charge_id <> p_bank_id)",
      "",
    ] as const;
    expect((await creditThrough(key, charge({ chargeId: "ch_x" }))).moved).toBeNull();
    expect(await creditThroughBroken(guard, key, charge({ chargeId: "ch_x" }))).toMatchObject({ credited: true });
  });
  it("with a payout's success made a credit, the books refuse the move (no rule credits a payout); the real one posts it", async () => {
    const user = await createTestUser();
    const { key } = await processingPayout(user.id, 1000);
    const reported = charge({ chargeId: "po_nc" });
    const broken = ["ledger_settle_matching_entry", "WHEN 'payout' THEN false", "WHEN 'payout' THEN true"] as const;
    await expect(creditThroughBroken(broken, key, reported, undefined, "payout")).rejects.toMatchObject({
      code: "23514",
    });
    expect((await creditThrough(key, reported, testPool(), "payout")).moved).not.toBeNull();
    expect(await balanceOf(user.id)).toBe(4000);
  });
});
