/**
 * runOnceForIdentical (lib/http/identical-operations.ts): identical operation requests running at once share one
 * run's stored response, as replays byte for byte (contract sections 1 and 3); nothing else is shared. Real
 * PostgreSQL and Redis for the payments.
 */
import { describe, expect, it, vi } from "vitest";
import { runOnceForIdentical } from "../../lib/http/identical-operations";
import type { OperationResult } from "../../lib/ledger";
import { createPayment } from "../../lib/payments/create-payment";
import { createTestUser } from "../helpers/db";
import { balanceOf, countRows, freshRefId, seedBalance } from "../helpers/ledger";

const BURST = 20;

function payOnce(userId: string, input: { orderId: string; amountMinor: number; currency: string }) {
  const run = vi.fn(() => createPayment({ userId, ...input }));
  return { run, call: () => runOnceForIdentical("payment", userId, input, run) };
}

/** A run whose outcome is decided by the test, released when the test says so. */
function heldRun(outcome: () => Promise<OperationResult>) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const run = vi.fn(async () => {
    await released;
    return await outcome();
  });
  return { run, release };
}

const stored: OperationResult = {
  kind: "response",
  response: { status: 201, body: '{"payment":{"orderId":"o"}}' },
  replayed: false,
};

describe("runOnceForIdentical", () => {
  it("runs a burst of identical payments once: one row, one debit, every answer the same bytes, the rest replays", async () => {
    const user = await createTestUser();
    await seedBalance(user.id, 1000);
    const input = { orderId: freshRefId("order"), amountMinor: 300, currency: "USD" };
    const { run, call } = payOnce(user.id, input);
    const results = await Promise.all(Array.from({ length: BURST }, call));
    expect(run).toHaveBeenCalledTimes(1);
    const responses = results.map((result) => {
      if (result.kind !== "response") throw new Error(`expected a response, got ${result.kind}`);
      return result;
    });
    expect(new Set(responses.map((r) => `${r.response.status} ${r.response.body}`)).size).toBe(1);
    expect(responses.filter((r) => !r.replayed)).toHaveLength(1);
    expect(responses.filter((r) => r.replayed)).toHaveLength(BURST - 1);
    expect(await countRows(user.id, "payment", input.orderId)).toBe(1);
    expect(await balanceOf(user.id)).toBe(700);
    // After the burst nothing is held: the next identical request runs (and replays from the ledger's copy).
    const after = await call();
    expect(run).toHaveBeenCalledTimes(2);
    expect(after).toEqual({ kind: "response", replayed: true, response: responses[0]!.response });
  });

  it("never shares between other users, other keys or other parameters", async () => {
    const [alice, bob] = [await createTestUser(), await createTestUser()];
    await seedBalance(alice.id, 1000);
    await seedBalance(bob.id, 1000);
    const orderId = freshRefId("order");
    const runs = [
      payOnce(alice.id, { orderId, amountMinor: 100, currency: "USD" }),
      payOnce(bob.id, { orderId, amountMinor: 100, currency: "USD" }),
      payOnce(alice.id, { orderId: `${orderId}-2`, amountMinor: 100, currency: "USD" }),
      payOnce(alice.id, { orderId, amountMinor: 101, currency: "USD" }),
    ];
    const results = await Promise.all(runs.map(({ call }) => call()));
    for (const { run } of runs) expect(run).toHaveBeenCalledTimes(1);
    expect(results.map((r) => r.kind)).toEqual(["response", "response", "response", "mismatch"]);
    expect(await balanceOf(alice.id)).toBe(800);
    expect(await balanceOf(bob.id)).toBe(900);
  });

  it("does not share a refusal or a mismatch: each waiting request runs itself", async () => {
    const input = { orderId: freshRefId("order"), amountMinor: 1, currency: "USD" };
    const notStored: OperationResult[] = [
      { kind: "refused", code: "rate_limited", detail: "too many", retryAfterS: 3 },
      { kind: "mismatch", fields: ["amount"] },
    ];
    for (const outcome of notStored) {
      const first = heldRun(async () => outcome);
      const leader = runOnceForIdentical("payment", "user-a", input, first.run);
      const followerRun = vi.fn(async () => stored);
      const follower = runOnceForIdentical("payment", "user-a", input, followerRun);
      first.release();
      expect(await leader).toEqual(outcome);
      expect(await follower).toEqual(stored);
      expect(followerRun).toHaveBeenCalledTimes(1);
    }
  });

  it("a waiting request gets 409's outcome when the running one is not answered within the wait, or is in progress itself", async () => {
    const input = { orderId: freshRefId("order"), amountMinor: 1, currency: "USD" };
    // Still running after the waiting request's wait (contract section 3: a duplicate waits up to
    // IDEMPOTENCY_WAIT_MS, then gets 409 request_in_progress); 50 ms stands in for the 3 s default.
    const slow = heldRun(async () => stored);
    const leader = runOnceForIdentical("payment", "user-d", input, slow.run);
    const followerRun = vi.fn(async () => stored);
    const follower = await runOnceForIdentical("payment", "user-d", input, followerRun, 50);
    expect(follower).toEqual({ kind: "in_progress", retryAfterS: 1 });
    expect(followerRun).not.toHaveBeenCalled();
    slow.release();
    expect(await leader).toEqual(stored);
    // The running request itself answered in_progress (its winner is in another process): so does the waiting one.
    const inProgress: OperationResult = { kind: "in_progress", retryAfterS: 1 };
    const waiting = heldRun(async () => inProgress);
    const second = runOnceForIdentical("payment", "user-d", input, waiting.run);
    const secondFollowerRun = vi.fn(async () => stored);
    const secondFollower = runOnceForIdentical("payment", "user-d", input, secondFollowerRun);
    waiting.release();
    expect(await second).toEqual(inProgress);
    expect(await secondFollower).toEqual(inProgress);
    expect(secondFollowerRun).not.toHaveBeenCalled();
  });

  it("does not share a thrown error: the first request throws, the waiting one runs itself", async () => {
    const input = { orderId: freshRefId("order"), amountMinor: 1, currency: "USD" };
    const first = heldRun(async () => {
      throw new Error("database down");
    });
    const leader = runOnceForIdentical("payment", "user-b", input, first.run);
    const followerRun = vi.fn(async () => stored);
    const follower = runOnceForIdentical("payment", "user-b", input, followerRun);
    first.release();
    await expect(leader).rejects.toThrow("database down");
    expect(await follower).toEqual(stored);
    expect(followerRun).toHaveBeenCalledTimes(1);
  });

  it("answers a waiting request with the stored response as a replay, whatever the first request was", async () => {
    const input = { orderId: freshRefId("order"), amountMinor: 1, currency: "USD" };
    const first = heldRun(async () => stored);
    const leader = runOnceForIdentical("payment", "user-c", input, first.run);
    const followerRun = vi.fn(async () => stored);
    const follower = runOnceForIdentical("payment", "user-c", input, followerRun);
    first.release();
    expect(await leader).toEqual(stored);
    expect(await follower).toEqual({ ...stored, replayed: true });
    expect(followerRun).not.toHaveBeenCalled();
  });
});
