/**
 * Rewards when Redis misbehaves (contract section 6; case C06): a stalled Redis, a flushed Redis, garbage at
 * the counter key, a stopped Redis. Each test runs on its own private redis-server (tests/helpers/rewards.ts),
 * because pausing, flushing or stopping the stack's shared Redis would disturb other test files; the cap store
 * is injected, on a client with exactly the app's options.
 */
import { describe, expect, it } from "vitest";
import { createRewardCapCheck } from "../../lib/audit/checks/reward-cap";
import { capCounterKey, capKeysExpireAtS, CapStoreUnavailableError } from "../../lib/rewards/cap-store";
import { creditReward } from "../../lib/rewards/credit-reward";
import { createPayment } from "../../lib/payments/create-payment";
import { rewardDay } from "../../lib/rewards/reward-day";
import type { OperationResult } from "../../lib/ledger";
import { createTestUser } from "../helpers/db";
import { balanceOf, countRows } from "../helpers/ledger";
import { creditedRewardsMinor, rewardRowCount, startOwnRedis, type OwnRedis } from "../helpers/rewards";

const CAP_MINOR = 50;

/** Longer than the app client's 500 ms commandTimeout (lib/redis.ts), so a command written during it times out. */
const PAUSE_MS = 2000;

const today = () => rewardDay(new Date(), "UTC");

function statusOf(result: OperationResult): number | string {
  if (result.kind === "response") return result.response.status;
  if (result.kind === "refused") return result.code;
  return result.kind;
}

async function withOwnRedis(test: (own: OwnRedis) => Promise<void>): Promise<void> {
  const own = await startOwnRedis();
  try {
    await test(own);
  } finally {
    await own.stop();
  }
}

describe("rewards with a misbehaving Redis", () => {
  it("C06: a reserve that times out while Redis is paused answers 503, still runs when Redis resumes, and once confirmed the counter equals the rewards credited", async () => {
    await withOwnRedis(async (own) => {
      expect(own.client.options.commandTimeout).toBe(500);
      const user = await createTestUser();
      const day = today();
      expect(statusOf(await creditReward({ userId: user.id, adId: "before" }, { capStore: own.store }))).toBe(201);

      // CLIENT PAUSE WRITE holds every script (EVAL/EVALSHA count as writes) for PAUSE_MS.
      await own.admin.call("CLIENT", "PAUSE", String(PAUSE_MS), "WRITE");
      const startedMs = Date.now();
      const stalled = await creditReward({ userId: user.id, adId: "during" }, { capStore: own.store });
      expect(stalled).toMatchObject({ kind: "refused", code: "cap_store_unavailable" });
      expect(Date.now() - startedMs).toBeLessThan(PAUSE_MS);
      expect(await countRows(user.id, "reward", `during:${day}`)).toBe(0);

      // A write on the staging client waits out the pause; then a PING on the app's connection returns only
      // after the commands queued before it on that connection (the late reserve, then its release) have run.
      await own.admin.set("pause-probe", "1");
      await own.client.ping();
      const state = await own.store.readDay(user.id, day);
      // The timed-out reserve did run (docs/development.md note 21), and the release sent after it took it back.
      expect(state.operations.find((o) => o.adId === "during")).toMatchObject({
        state: "released",
        amountMinor: 5,
        holders: 0,
      });
      expect(state.counterMinor).toBe(await creditedRewardsMinor(user.id, day));
      expect(state.counterMinor).toBe(5);

      // The user's retry is a new attempt: it reserves and lands normally.
      expect(statusOf(await creditReward({ userId: user.id, adId: "during" }, { capStore: own.store }))).toBe(201);
      expect((await own.store.readDay(user.id, day)).counterMinor).toBe(10);
      expect(await balanceOf(user.id)).toBe(10);
      expect(await createRewardCapCheck({ userIds: [user.id], capStore: own.store }).run()).toMatchObject({ ok: true });
    });
  });

  it("C06 negative control: without the release after a timeout, the reserve that ran late stays counted", async () => {
    await withOwnRedis(async (own) => {
      const user = await createTestUser();
      const day = today();
      await creditReward({ userId: user.id, adId: "before" }, { capStore: own.store });
      await own.admin.call("CLIENT", "PAUSE", String(PAUSE_MS), "WRITE");
      const op = {
        userId: user.id,
        day,
        adId: "during",
        attemptId: "no-release",
        keysExpireAtS: capKeysExpireAtS(day, "UTC"),
      };
      await expect(own.store.reserve(op, 5, CAP_MINOR)).rejects.toMatchObject({ reason: "timeout" });
      await own.admin.set("pause-probe", "1");
      await own.client.ping();
      expect((await own.store.readDay(user.id, day)).counterMinor).toBe(10);
      expect(await creditedRewardsMinor(user.id, day)).toBe(5);
    });
  });

  it("after a mid-day FLUSHALL the counter is re-seeded from the ledger and 20 parallel rewards hold the cap", async () => {
    await withOwnRedis(async (own) => {
      const user = await createTestUser();
      const day = today();
      for (let i = 0; i < 4; i++) {
        expect(statusOf(await creditReward({ userId: user.id, adId: `early-${i}` }, { capStore: own.store }))).toBe(
          201,
        );
      }
      await own.admin.flushall();
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          creditReward({ userId: user.id, adId: `after-flush-${i}` }, { capStore: own.store }),
        ),
      );
      const statuses = results.map(statusOf);
      expect(statuses.filter((s) => s === 201)).toHaveLength(6);
      expect(statuses.filter((s) => s === "daily_cap_reached")).toHaveLength(14);
      expect(await creditedRewardsMinor(user.id, day)).toBe(CAP_MINOR);
      expect((await own.store.readDay(user.id, day)).counterMinor).toBe(CAP_MINOR);
      expect(await balanceOf(user.id)).toBe(CAP_MINOR);
    });
  });

  it("garbage at the counter key: 503 cap_store_unavailable and no ledger row; a replay of an earlier reward still works", async () => {
    await withOwnRedis(async (own) => {
      const user = await createTestUser();
      const day = today();
      const first = await creditReward({ userId: user.id, adId: "ad-1" }, { capStore: own.store });
      expect(statusOf(first)).toBe(201);
      await own.admin.set(capCounterKey(user.id, day), "not-a-number", "KEEPTTL");
      expect(await creditReward({ userId: user.id, adId: "ad-2" }, { capStore: own.store })).toMatchObject({
        kind: "refused",
        code: "cap_store_unavailable",
      });
      expect(await rewardRowCount(user.id)).toBe(1);
      expect(await balanceOf(user.id)).toBe(5);
      expect(await own.admin.get(capCounterKey(user.id, day))).toBe("not-a-number");
      // A key with a row never touches the cap (contract section 6).
      const replay = await creditReward({ userId: user.id, adId: "ad-1" }, { capStore: own.store });
      expect(replay).toMatchObject({ kind: "response", replayed: true });
      // The audit names the broken counter.
      const audit = await createRewardCapCheck({ userIds: [user.id], capStore: own.store }).run();
      expect(audit.ok).toBe(false);
      expect(audit.violations.join("\n")).toContain("garbage");
    });
  });

  it("Redis stopped: rewards answer 503 within the connect bound and create nothing, while a payment still succeeds", async () => {
    const own = await startOwnRedis();
    try {
      const user = await createTestUser();
      expect(statusOf(await creditReward({ userId: user.id, adId: "ad-up" }, { capStore: own.store }))).toBe(201);
      await own.server.stop();
      const startedMs = Date.now();
      const refused = await creditReward({ userId: user.id, adId: "ad-down" }, { capStore: own.store });
      expect(refused).toMatchObject({ kind: "refused", code: "cap_store_unavailable" });
      // ensureRedisConnected waits at most 1 s for a reconnect, once for the reserve and once for the release:
      // about 2 s, bounded here at 4 s to leave a loaded CI machine room.
      expect(Date.now() - startedMs).toBeLessThan(4000);
      expect(await rewardRowCount(user.id)).toBe(1);
      const payment = await createPayment({
        userId: user.id,
        orderId: `order-${user.id}`,
        amountMinor: 3,
        currency: "USD",
      });
      expect(statusOf(payment)).toBe(201);
      expect(await balanceOf(user.id)).toBe(2);
      // The audit runs without Redis and says what it skipped.
      const audit = await createRewardCapCheck({ userIds: [user.id], capStore: own.store }).run();
      expect(audit.ok).toBe(true);
      expect(audit.notes?.join("\n")).toContain("not compared");
    } finally {
      await own.stop();
    }
  });

  it("the audit reports a counter that differs from credited + in flight, and a leaked reservation", async () => {
    await withOwnRedis(async (own) => {
      const user = await createTestUser();
      const day = today();
      await creditReward({ userId: user.id, adId: "ad-1" }, { capStore: own.store });
      expect(await createRewardCapCheck({ userIds: [user.id], capStore: own.store }).run()).toMatchObject({ ok: true });

      // A reservation whose request died before releasing it: in flight, then stale.
      const op = {
        userId: user.id,
        day,
        adId: "ad-leaked",
        attemptId: "dead-request",
        keysExpireAtS: capKeysExpireAtS(day, "UTC"),
      };
      await own.store.reserve(op, 5, CAP_MINOR);
      expect(await createRewardCapCheck({ userIds: [user.id], capStore: own.store }).run()).toMatchObject({ ok: true });
      const stale = await createRewardCapCheck({
        userIds: [user.id],
        capStore: own.store,
        staleReservationMs: 0,
      }).run();
      expect(stale.ok).toBe(false);
      expect(stale.violations.join("\n")).toContain("leaked");

      await own.store.release(op);
      await own.admin.incrby(capCounterKey(user.id, day), 5);
      const drifted = await createRewardCapCheck({ userIds: [user.id], capStore: own.store }).run();
      expect(drifted.ok).toBe(false);
      expect(drifted.violations).toEqual([
        `user ${user.id} day ${day}: counter 10 differs from credited 5 + in flight 0`,
      ]);
    });
  });

  it("every Redis failure reaches creditReward as CapStoreUnavailableError (typed), never as a raw client error", async () => {
    await withOwnRedis(async (own) => {
      await own.server.stop();
      const op = {
        userId: "u",
        day: today(),
        adId: "a",
        attemptId: "x",
        keysExpireAtS: capKeysExpireAtS(today(), "UTC"),
      };
      await expect(own.store.reserve(op, 5, CAP_MINOR)).rejects.toBeInstanceOf(CapStoreUnavailableError);
      await expect(own.store.release(op)).rejects.toBeInstanceOf(CapStoreUnavailableError);
      await expect(own.store.confirm(op, 5)).rejects.toBeInstanceOf(CapStoreUnavailableError);
    });
  });
});
