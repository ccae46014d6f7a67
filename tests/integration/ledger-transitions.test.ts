/**
 * Guarded transitions (contract section 2): one test per state and transition, the fencing token, and the
 * audit trail. Real PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { jsonResponseTemplate } from "../../lib/ledger/response-template";
import { jsonStoredResponse } from "../../lib/ledger/views";
import {
  attachCharge,
  attachChargeAndRespond,
  completeEntry,
  failEntry,
  getEntryById,
  markProcessing,
  recordSettleFailure,
  storeResponse,
} from "../../lib/ledger/transitions";
import { createTestUser, testPool } from "../helpers/db";
import { balanceOf, claimEntry, claimRequest, transitionsOf } from "../helpers/ledger";

async function claimed(userId: string, amountMinor = 1000) {
  const entry = await claimEntry(claimRequest(userId, { amountMinor }));
  return { entry, ref: { userId, entryId: entry.id } };
}

describe("lifecycle", () => {
  it("initiated → processing → succeeded credits the wallet once, in the same statement", async () => {
    const user = await createTestUser();
    const { entry, ref } = await claimed(user.id, 2500);
    expect((await markProcessing(ref, entry.fencingToken)).kind).toBe("moved");
    const done = await completeEntry(ref, {
      actor: "request",
      guard: { kind: "lease", fencingToken: entry.fencingToken },
      credit: true,
      bankChargeId: "ch_1",
    });
    expect(done).toMatchObject({ kind: "moved", fromStatus: "processing", balanceMinor: 2500 });
    expect(done.entry).toMatchObject({
      status: "succeeded",
      bankChargeId: "ch_1",
      leaseOwner: null,
      leaseExpiresAt: null,
    });
    expect(await balanceOf(user.id)).toBe(2500);
    expect(await transitionsOf(user.id, entry.id)).toEqual([
      { from: null, to: "initiated", actor: "request", fencingToken: 1 },
      { from: "initiated", to: "processing", actor: "request", fencingToken: 1 },
      { from: "processing", to: "succeeded", actor: "request", fencingToken: 1 },
    ]);
  });

  it("a credit repays the wallet's debt first, in the same statement: only the rest reaches the balance", async () => {
    const user = await createTestUser();
    await testPool().query(
      "INSERT INTO wallets (user_id, balance_minor, debt_minor, currency) VALUES ($1, 0, 700, 'USD')",
      [user.id],
    );
    const small = await claimed(user.id, 300);
    await completeEntry(small.ref, { actor: "webhook", guard: { kind: "status_only" }, credit: true });
    const afterSmall = await testPool().query(
      "SELECT balance_minor::int AS balance_minor, debt_minor::int AS debt_minor FROM wallets WHERE user_id = $1",
      [user.id],
    );
    expect(afterSmall.rows[0]).toEqual({ balance_minor: 0, debt_minor: 400 });
    const large = await claimed(user.id, 1000);
    const done = await completeEntry(large.ref, { actor: "webhook", guard: { kind: "status_only" }, credit: true });
    expect(done).toMatchObject({ kind: "moved", balanceMinor: 600 });
    const afterLarge = await testPool().query(
      "SELECT balance_minor::int AS balance_minor, debt_minor::int AS debt_minor FROM wallets WHERE user_id = $1",
      [user.id],
    );
    expect(afterLarge.rows[0]).toEqual({ balance_minor: 600, debt_minor: 0 });
  });

  it("initiated → succeeded directly when the bank's answer arrives before processing was recorded", async () => {
    const user = await createTestUser();
    const { ref } = await claimed(user.id);
    const done = await completeEntry(ref, { actor: "webhook", guard: { kind: "status_only" }, credit: true });
    expect(done).toMatchObject({ kind: "moved", fromStatus: "initiated" });
    expect(await balanceOf(user.id)).toBe(1000);
  });

  it("initiated → failed records the reason and moves no money", async () => {
    const user = await createTestUser();
    const { ref } = await claimed(user.id);
    const failed = await failEntry(ref, {
      actor: "request",
      guard: { kind: "status_only" },
      reason: "declined_by_bank",
    });
    expect(failed).toMatchObject({
      kind: "moved",
      fromStatus: "initiated",
      entry: { status: "failed", failureReason: "declined_by_bank" },
    });
    expect(await balanceOf(user.id)).toBe(0);
  });

  it("processing → failed records the bank's charge id and the audit detail, and moves no money", async () => {
    const user = await createTestUser();
    const { entry, ref } = await claimed(user.id);
    await markProcessing(ref, entry.fencingToken);
    const failed = await failEntry(ref, {
      actor: "webhook",
      guard: { kind: "status_only" },
      reason: "declined_by_bank",
      bankChargeId: "ch_declined",
      detail: "event evt_1",
    });
    expect(failed).toMatchObject({
      kind: "moved",
      fromStatus: "processing",
      entry: { status: "failed", bankChargeId: "ch_declined", failureReason: "declined_by_bank" },
    });
    const audit = await testPool().query(
      "SELECT detail FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id DESC LIMIT 1",
      [user.id, entry.id],
    );
    expect(audit.rows[0].detail).toBe("event evt_1");
    expect(await balanceOf(user.id)).toBe(0);
  });

  it("the webhook completes a row whose lease was taken over (status-only guard, whatever the attempt)", async () => {
    const user = await createTestUser();
    const { entry, ref } = await claimed(user.id);
    await testPool().query("UPDATE ledger_entries SET attempt = attempt + 1 WHERE user_id = $1 AND id = $2", [
      user.id,
      entry.id,
    ]);
    const done = await completeEntry(ref, {
      actor: "webhook",
      guard: { kind: "status_only" },
      credit: true,
      detail: "event evt_2",
    });
    expect(done).toMatchObject({ kind: "moved", entry: { status: "succeeded", fencingToken: 2 } });
    expect(await balanceOf(user.id)).toBe(1000);
  });

  it("a terminal row never changes status again: complete twice credits once, fail after success is refused", async () => {
    const user = await createTestUser();
    const { ref } = await claimed(user.id);
    const guard = { kind: "status_only" } as const;
    expect((await completeEntry(ref, { actor: "webhook", guard, credit: true })).kind).toBe("moved");
    const again = await completeEntry(ref, { actor: "webhook", guard, credit: true });
    expect(again).toMatchObject({ kind: "not_moved", entry: { status: "succeeded" } });
    const late = await failEntry(ref, { actor: "webhook", guard, reason: "declined_by_bank" });
    expect(late).toMatchObject({ kind: "not_moved", entry: { status: "succeeded", failureReason: null } });
    expect((await markProcessing(ref, 1)).kind).toBe("not_moved");
    expect(await balanceOf(user.id)).toBe(1000);
  });

  it("C05: the webhook and the request completing the same row in the same tick credit once; both see success", async () => {
    const user = await createTestUser();
    const { entry, ref } = await claimed(user.id);
    const [fromWebhook, fromRequest] = await Promise.all([
      completeEntry(ref, { actor: "webhook", guard: { kind: "status_only" }, credit: true }),
      completeEntry(ref, {
        actor: "request",
        guard: { kind: "lease", fencingToken: entry.fencingToken },
        credit: true,
      }),
    ]);
    expect([fromWebhook.kind, fromRequest.kind].sort()).toEqual(["moved", "not_moved"]);
    expect(fromWebhook.entry.status).toBe("succeeded");
    expect(fromRequest.entry.status).toBe("succeeded");
    expect(await balanceOf(user.id)).toBe(1000);
  });

  it("attachCharge records the bank's charge id once, only on an unfinished row", async () => {
    const user = await createTestUser();
    const { ref } = await claimed(user.id);
    expect((await attachCharge(ref, "ch_a"))?.bankChargeId).toBe("ch_a");
    expect(await attachCharge(ref, "ch_b")).toBeNull();
    expect((await getEntryById(ref))?.bankChargeId).toBe("ch_a");
  });

  it("attachChargeAndRespond records the charge id and the first response together, its time slot the row's new updatedAt", async () => {
    const user = await createTestUser();
    const { entry, ref } = await claimed(user.id);
    await markProcessing(ref, entry.fencingToken);
    const first = {
      status: "processing" as const,
      response: jsonResponseTemplate(201, (time) => ({ status: "processing", updatedAt: time })),
    };
    const answered = await attachChargeAndRespond(ref, "ch_a", first);
    expect(answered).toMatchObject({ bankChargeId: "ch_a", status: "processing" });
    const row = await getEntryById(ref);
    expect(row?.updatedAt.getTime()).toBe(answered?.updatedAt.getTime());
    expect(row?.updatedAt.getTime()).toBeGreaterThanOrEqual(entry.updatedAt.getTime());
    // Byte for byte the body a render of the written row gives.
    const rendered = jsonStoredResponse(201, { status: "processing", updatedAt: row!.updatedAt.toISOString() });
    expect(row?.response).toEqual(rendered);
    expect(answered?.response).toEqual(rendered);
    // Once: a charge id or a response already there, and nothing is written.
    expect(await attachChargeAndRespond(ref, "ch_b", first)).toBeNull();
    expect(await getEntryById(ref)).toEqual(row);
  });

  it("attachChargeAndRespond writes nothing when the row left the status its response was built from, or has a response", async () => {
    const user = await createTestUser();
    const first = {
      status: "processing" as const,
      response: jsonResponseTemplate(201, (time) => ({ status: "processing", updatedAt: time })),
    };
    // Credited by the webhook before the request got the bank's answer: a "processing" answer would be stale.
    const credited = await claimed(user.id);
    await markProcessing(credited.ref, credited.entry.fencingToken);
    await completeEntry(credited.ref, { actor: "webhook", guard: { kind: "status_only" }, credit: true });
    expect(await attachChargeAndRespond(credited.ref, "ch_c", first)).toBeNull();
    expect(await getEntryById(credited.ref)).toMatchObject({ status: "succeeded", bankChargeId: null, response: null });
    // A response already stored (first writer wins), the row still processing without a charge id.
    const answered = await claimed(user.id);
    await markProcessing(answered.ref, answered.entry.fencingToken);
    await storeResponse(answered.ref, jsonStoredResponse(201, { earlier: true }));
    expect(await attachChargeAndRespond(answered.ref, "ch_d", first)).toBeNull();
    expect(await getEntryById(answered.ref)).toMatchObject({
      bankChargeId: null,
      response: jsonStoredResponse(201, { earlier: true }),
    });
  });
});

describe("leases and fencing", () => {
  it("a worker whose lease was taken over cannot complete the row; the new owner can", async () => {
    const user = await createTestUser();
    const { entry, ref } = await claimed(user.id);
    // A take-over raises the fencing token (what the reconciler does when the lease has expired).
    await testPool().query(
      "UPDATE ledger_entries SET attempt = attempt + 1, lease_owner = 'reconciler', lease_expires_at = now() + interval '30 seconds' WHERE user_id = $1 AND id = $2",
      [user.id, entry.id],
    );
    const stale = await completeEntry(ref, {
      actor: "request",
      guard: { kind: "lease", fencingToken: entry.fencingToken },
      credit: true,
    });
    expect(stale).toMatchObject({ kind: "not_moved", entry: { status: "initiated", fencingToken: 2 } });
    expect((await markProcessing(ref, entry.fencingToken)).kind).toBe("not_moved");
    expect(await balanceOf(user.id)).toBe(0);
    const fresh = await completeEntry(ref, {
      actor: "reconciler",
      guard: { kind: "lease", fencingToken: 2 },
      credit: true,
    });
    expect(fresh).toMatchObject({ kind: "moved", entry: { status: "succeeded", fencingToken: 2 } });
    expect(await balanceOf(user.id)).toBe(1000);
    expect((await transitionsOf(user.id, entry.id)).at(-1)).toEqual({
      from: "initiated",
      to: "succeeded",
      actor: "reconciler",
      fencingToken: 2,
    });
  });

  it("the audit table is append-only", async () => {
    const user = await createTestUser();
    const { entry } = await claimed(user.id);
    await expect(
      testPool().query("UPDATE ledger_transitions SET actor = 'admin' WHERE user_id = $1", [user.id]),
    ).rejects.toThrow(/append-only/);
    await expect(testPool().query("DELETE FROM ledger_transitions WHERE user_id = $1", [user.id])).rejects.toThrow(
      /append-only/,
    );
    expect(await transitionsOf(user.id, entry.id)).toHaveLength(1);
  });
});

/** The detail of the entry's latest audit transition. */
async function lastAuditDetail(userId: string, entryId: number): Promise<string | null> {
  const audit = await testPool().query(
    "SELECT detail FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id DESC LIMIT 1",
    [userId, entryId],
  );
  return audit.rows[0].detail;
}

describe("what the transitions tell their callers", () => {
  it("completeEntry records its audit detail (the webhook's event id) on the transition", async () => {
    const user = await createTestUser();
    const { entry, ref } = await claimed(user.id);
    await completeEntry(ref, { actor: "webhook", guard: { kind: "status_only" }, credit: true, detail: "event evt_3" });
    expect(await lastAuditDetail(user.id, entry.id)).toBe("event evt_3");
  });

  it("markProcessing's actor defaults to the request and records a re-drive's reconciler", async () => {
    const user = await createTestUser();
    const first = await claimed(user.id);
    await markProcessing(first.ref, first.entry.fencingToken);
    const second = await claimed(user.id);
    await markProcessing(second.ref, second.entry.fencingToken, { actor: "reconciler" });
    expect((await transitionsOf(user.id, first.entry.id)).at(-1)?.actor).toBe("request");
    expect((await transitionsOf(user.id, second.entry.id)).at(-1)?.actor).toBe("reconciler");
  });

  it("a transition of a row that does not exist throws, naming the row (never a silent refusal)", async () => {
    const user = await createTestUser();
    const missing = { userId: user.id, entryId: 2 ** 40 };
    await expect(
      completeEntry(missing, { actor: "webhook", guard: { kind: "status_only" }, credit: true }),
    ).rejects.toThrow(`ledger entry ${user.id}/${2 ** 40} does not exist`);
    expect(await getEntryById(missing)).toBeNull();
    expect(await attachCharge(missing, "ch_missing")).toBeNull();
  });

  it("storeResponse on a row that does not exist throws (no response stored, none to replay)", async () => {
    const user = await createTestUser();
    await expect(storeResponse({ userId: user.id, entryId: 2 ** 40 }, { status: 201, body: "{}" })).rejects.toThrow(
      `ledger entry ${user.id}/${2 ** 40}: response neither stored nor present`,
    );
  });

  it("recordSettleFailure returns the running count, and the flag time from the attempt that reaches the maximum on", async () => {
    const user = await createTestUser();
    const { ref } = await claimed(user.id);
    expect(await recordSettleFailure(ref, "credit refused (1)", 3)).toEqual({ failures: 1, flaggedAt: null });
    expect(await recordSettleFailure(ref, "credit refused (2)", 3)).toEqual({ failures: 2, flaggedAt: null });
    const third = await recordSettleFailure(ref, "credit refused (3)", 3);
    expect(third?.failures).toBe(3);
    expect(third?.flaggedAt).toBeInstanceOf(Date);
    // The first flag time is kept: later failures do not move it.
    const fourth = await recordSettleFailure(ref, "credit refused (4)", 3);
    expect(fourth).toEqual({ failures: 4, flaggedAt: third?.flaggedAt });
    const stored = await testPool().query(
      "SELECT settle_failures, settle_last_error, status FROM ledger_entries WHERE user_id = $1 AND id = $2",
      [user.id, ref.entryId],
    );
    expect(stored.rows[0]).toEqual({
      settle_failures: 4,
      settle_last_error: "credit refused (4)",
      status: "initiated",
    });
  });

  it("recordSettleFailure on a row that does not exist returns null", async () => {
    const user = await createTestUser();
    expect(await recordSettleFailure({ userId: user.id, entryId: 2 ** 40 }, "credit refused", 3)).toBeNull();
  });
});
