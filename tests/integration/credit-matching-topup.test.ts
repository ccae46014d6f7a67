/**
 * `creditMatchingTopup` (lib/ledger/transitions.ts): a charge's success credited in one statement, the webhook's
 * common case (contract sections 2 and 5, case C19). Each guard of its WHERE clause is shown to refuse what it must,
 * writing nothing, not even the caller's extra write; a staged race credits once; and copies of the statement with a
 * guard removed let through what the real one refuses (negative controls). Real PostgreSQL.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { claimOperation } from "../../lib/ledger/claim";
import {
  ALSO_FIRST_PARAM,
  attachCharge,
  completeEntry,
  creditMatchingTopup,
  creditMatchingTopupSql,
  failEntry,
  getEntryById,
  markProcessing,
  type AlsoWrite,
  type ReportedCharge,
} from "../../lib/ledger/transitions";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf, claimRequest, dedicatedClient, freshRefId, transitionsOf } from "../helpers/ledger";
import { waitForBlockedSessions } from "../helpers/wait";
import { backendPid } from "./reconciler-fixtures";

/** The caller's extra write: a row in bank_webhook_events named by a fresh event id, as the webhook records. */
function eventRecord(): { also: AlsoWrite; eventId: string } {
  const eventId = `evt_test_${randomUUID()}`;
  return {
    eventId,
    also: {
      name: "test_record",
      sql: `INSERT INTO bank_webhook_events (event_id, type, outcome, payload) SELECT $${ALSO_FIRST_PARAM}::text, 'test', 'credited', '' FROM moved`,
      values: [eventId],
    },
  };
}

async function eventRows(eventId: string): Promise<number> {
  const result = await testPool().query("SELECT 1 FROM bank_webhook_events WHERE event_id = $1", [eventId]);
  return result.rowCount ?? 0;
}

/** A claimed top-up row, moved to `processing` as the request leaves it before the bank's answer. */
async function processingTopup(userId: string, amountMinor = 1000) {
  const refId = freshRefId("cmt");
  const claim = await claimOperation(claimRequest(userId, { refId, amountMinor }), 0);
  if (claim.kind !== "claimed") throw new Error("expected a claim");
  const ref = { userId, entryId: claim.entry.id };
  await markProcessing(ref, claim.entry.attempt);
  return { key: { userId, refId }, ref, attempt: claim.entry.attempt };
}

const charge = (overrides: Partial<ReportedCharge> = {}): ReportedCharge => ({
  chargeId: `ch_${randomUUID()}`,
  amountMinor: 1000,
  currency: "USD",
  ...overrides,
});

const options = (also: AlsoWrite) => ({ actor: "webhook" as const, detail: "webhook: charge.succeeded evt_1", also });

describe("creditMatchingTopup", () => {
  it("moves the unfinished top-up to succeeded with its charge id, its credit, its audit row and the extra write, in one commit", async () => {
    const user = await createTestUser();
    const { key, ref } = await processingTopup(user.id, 2500);
    const reported = charge({ amountMinor: 2500 });
    const { also, eventId } = eventRecord();
    const moved = await creditMatchingTopup(key, reported, options(also));
    expect(moved).toMatchObject({ kind: "moved", fromStatus: "processing", balanceMinor: 2500 });
    expect(moved?.entry).toMatchObject({
      status: "succeeded",
      bankChargeId: reported.chargeId,
      failureReason: null,
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    expect(await getEntryById(ref)).toEqual(moved?.entry);
    expect(await balanceOf(user.id)).toBe(2500);
    expect(await eventRows(eventId)).toBe(1);
    expect((await transitionsOf(user.id, ref.entryId)).at(-1)).toEqual({
      from: "processing",
      to: "succeeded",
      actor: "webhook",
      attempt: 1,
    });
    const detail = await testPool().query(
      "SELECT detail FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 AND to_status = 'succeeded'",
      [user.id, ref.entryId],
    );
    expect(detail.rows[0]?.detail).toBe("webhook: charge.succeeded evt_1");
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
    const moved = await creditMatchingTopup(key, reported, options(eventRecord().also));
    expect(moved).toMatchObject({ kind: "moved", balanceMinor: 700, entry: { bankChargeId: reported.chargeId } });
    const wallet = await testPool().query("SELECT balance_minor, debt_minor FROM wallets WHERE user_id = $1", [
      user.id,
    ]);
    expect(wallet.rows[0]).toEqual({ balance_minor: 700, debt_minor: 0 });
  });

  it("writes nothing, the extra write included, for a charge that disagrees with the row or a row that is not an unfinished top-up", async () => {
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
    const payment = await claimOperation(claimRequest(user.id, { type: "payment", refId: freshRefId("pay") }), 0);
    if (payment.kind !== "claimed") throw new Error("expected a claim");
    cases.push({ why: "a payment's ref id", key: { userId: user.id, refId: payment.entry.refId }, reported: charge() });
    const balanceBefore = await balanceOf(user.id);

    const results = [];
    for (const { why, key, reported } of cases) {
      const { also, eventId } = eventRecord();
      const moved = await creditMatchingTopup(key, reported, options(also));
      results.push({ why, moved, events: await eventRows(eventId) });
    }
    expect(results).toEqual(cases.map(({ why }) => ({ why, moved: null, events: 0 })));
    expect(await balanceOf(user.id)).toBe(balanceBefore);
    expect((await getEntryById(amount.ref))?.status).toBe("processing");
    expect((await getEntryById(otherCharge.ref))?.bankChargeId).toBe("ch_recorded");
    expect((await getEntryById(failed.ref))?.status).toBe("failed");
  });

  it("two deliveries released at once behind a held row lock: one credit, one extra write; the other gets null", async () => {
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
      const records = [eventRecord(), eventRecord()];
      const racing = records.map(({ also }) => creditMatchingTopup(key, reported, options(also)));
      await waitForBlockedSessions({ blockedBy: await backendPid(holder) }, 2, 10_000);
      await holder.query("COMMIT");
      const results = await Promise.all(racing);
      expect(results.map((r) => r?.kind ?? null).sort()).toEqual(["moved", null]);
      expect((await Promise.all(records.map(({ eventId }) => eventRows(eventId)))).sort()).toEqual([0, 1]);
      expect(await balanceOf(user.id)).toBe(1000);
    } finally {
      await holder.end();
    }
  });
});

describe("creditMatchingTopup negative controls: a copy with a guard removed lets through what the real one refuses", () => {
  /**
   * Runs a copy of the statement whose text has `guard` replaced by `stand_in` (a condition that is always true, and
   * keeps a parameter's type known when the guard was its only use); the replacement is checked to have happened.
   */
  async function runBroken(
    [guard, standIn]: readonly [string, string],
    key: { userId: string; refId: string },
    reported: ReportedCharge,
  ) {
    const { also } = eventRecord();
    const real = creditMatchingTopupSql(also.sql);
    const broken = real.replace(guard, standIn);
    expect(broken).not.toBe(real);
    const result = await testPool().query(broken, [
      key.userId,
      "topup",
      key.refId,
      reported.chargeId,
      reported.amountMinor,
      reported.currency,
      "webhook",
      "negative control",
      ...also.values,
    ]);
    return result.rowCount;
  }

  it("without the status guard, a second success credits a succeeded row again", async () => {
    const user = await createTestUser();
    const { key } = await processingTopup(user.id);
    const reported = charge();
    expect(await creditMatchingTopup(key, reported, options(eventRecord().also))).not.toBeNull();
    expect(await creditMatchingTopup(key, reported, options(eventRecord().also))).toBeNull();
    expect(await runBroken(["AND e.status IN ('initiated', 'processing')", ""], key, reported)).toBe(1);
    expect(await balanceOf(user.id)).toBe(2000);
  });

  it("without the amount guard, a charge of another amount credits the row", async () => {
    const user = await createTestUser();
    const { key } = await processingTopup(user.id);
    expect(
      await runBroken(["e.amount_minor = $5::bigint", "$5::bigint IS NOT NULL"], key, charge({ amountMinor: 5 })),
    ).toBe(1);
    expect(await balanceOf(user.id)).toBe(1000);
  });

  it("without the currency guard, a charge in another currency credits the row", async () => {
    const user = await createTestUser();
    const { key } = await processingTopup(user.id);
    expect(await runBroken(["e.currency = $6::text", "$6::text IS NOT NULL"], key, charge({ currency: "EUR" }))).toBe(
      1,
    );
  });

  it("without the charge id guard, another charge replaces the recorded one and credits", async () => {
    const user = await createTestUser();
    const { key, ref } = await processingTopup(user.id);
    await attachCharge(ref, "ch_recorded");
    expect(
      await runBroken(
        ["AND (e.bank_charge_id IS NULL OR e.bank_charge_id = $4)", ""],
        key,
        charge({ chargeId: "ch_x" }),
      ),
    ).toBe(1);
    expect((await getEntryById(ref))?.bankChargeId).toBe("ch_x");
  });
});
