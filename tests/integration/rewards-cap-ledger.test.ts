/**
 * The reward cap survives Redis losing acknowledged writes. A real redis-server is made to lose
 * writes the way a promoted lagging replica does (docs/development.md note 28): the user's cap keys are snapshotted
 * with DUMP, more rewards are credited, and the snapshot is RESTOREd over them, so Redis hands back an older, lower
 * counter and has forgotten the later reservations. PostgreSQL's per-(user, day) row (`reward_cap_days`) must still
 * refuse the credit that would pass the cap (429 daily_cap_reached, no row), and the counter must be raised back to the
 * ledger's total (by the refusal, by the next credit, or by the reconciler's repair when no reward follows); the
 * audit's invariant 7.3 then holds. Negative control: the same run with the PostgreSQL cap off (`ledgerCap: false`)
 * passes the cap, and the audit says so.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRewardCapCheck } from "../../lib/audit/checks/reward-cap";
import { creditReward } from "../../lib/rewards/credit-reward";
import { repairRewardCounters } from "../../lib/rewards/repair-reward-counters";
import { capCounterKey, capKeysExpireAtS, capOperationKey, RedisRewardCapStore } from "../../lib/rewards/cap-store";
import type { RewardRules } from "../../lib/rewards/rules";
import { createTestUser, testPool } from "../helpers/db";
import { creditedRewardsMinor, rewardRowCount, startOwnRedis, type OwnRedis } from "../helpers/rewards";

const RULES: RewardRules = { amountMinor: 5, dailyCapMinor: 50, timeZone: "UTC", currency: "USD" };
const NOW = new Date("2026-11-30T12:00:00Z");
const DAY = "2026-11-30";

let redis: OwnRedis;

beforeAll(async () => {
  redis = await startOwnRedis();
});

afterAll(async () => {
  await redis?.stop();
});

const reward = (userId: string, adId: string, ledgerCap = true) =>
  creditReward({ userId, adId, now: NOW }, { capStore: redis.store, rules: RULES, ledgerCap });

async function rewardAll(userId: string, adIds: string[], ledgerCap = true): Promise<number[]> {
  const statuses: number[] = [];
  for (const adId of adIds) {
    const result = await reward(userId, adId, ledgerCap);
    statuses.push(result.kind === "response" ? result.response.status : result.kind === "refused" ? 429 : 0);
  }
  return statuses;
}

/** Every cap key of the user with its DUMP: what a replica that stopped replicating now would hold. */
async function snapshotCapKeys(userId: string): Promise<Map<string, Buffer>> {
  const keys = await redis.admin.keys(`reward:cap:{${userId}}:*`);
  const snapshot = new Map<string, Buffer>();
  for (const key of keys) {
    const dumped = await redis.admin.dumpBuffer(key);
    if (dumped) snapshot.set(key, dumped);
  }
  return snapshot;
}

/** Replaces the user's cap keys with the snapshot: every write acknowledged since it is lost. */
async function loseWritesSince(userId: string, snapshot: Map<string, Buffer>): Promise<void> {
  const current = await redis.admin.keys(`reward:cap:{${userId}}:*`);
  if (current.length > 0) await redis.admin.del(...current);
  for (const [key, dumped] of snapshot) await redis.admin.restore(key, 0, dumped, "REPLACE");
}

const counter = async (userId: string) => Number(await redis.admin.get(capCounterKey(userId, DAY)));
const ads = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `ad-${from + i}`);

async function audit(userId: string) {
  return createRewardCapCheck({ userIds: [userId], capMinor: RULES.dailyCapMinor, capStore: redis.store }).run();
}

describe("the reward cap when Redis loses acknowledged writes", () => {
  it("PostgreSQL refuses the credit past the cap (429, no row) and the counter is raised back to the ledger's total", async () => {
    const user = await createTestUser();
    expect(await rewardAll(user.id, ads(1, 6))).toEqual(Array(6).fill(201));
    const snapshot = await snapshotCapKeys(user.id);
    expect(await rewardAll(user.id, ads(7, 10))).toEqual(Array(4).fill(201));
    expect(await counter(user.id)).toBe(50);

    await loseWritesSince(user.id, snapshot);
    expect(await counter(user.id)).toBe(30); // Redis now believes 20 minor units of room are left.

    const refused = await reward(user.id, "ad-11");
    expect(refused).toMatchObject({ kind: "refused", code: "daily_cap_reached" });
    expect(await rewardRowCount(user.id)).toBe(10); // no row for ad-11
    expect(await creditedRewardsMinor(user.id, DAY)).toBe(50);
    expect(await counter(user.id)).toBe(50); // raised back to the ledger's total

    // Redis refuses the next one by itself now; a replay of a credited ad still replays, cap or not.
    expect(await reward(user.id, "ad-12")).toMatchObject({ kind: "refused", code: "daily_cap_reached" });
    expect(await reward(user.id, "ad-7")).toMatchObject({ kind: "response", replayed: true });
    expect(await counter(user.id)).toBe(50);

    const check = await audit(user.id);
    expect(check.violations).toEqual([]);
    expect(check.ok).toBe(true);
  });

  it("a credit that fits raises a counter that lost writes back to the ledger's total", async () => {
    const user = await createTestUser();
    await rewardAll(user.id, ads(1, 2));
    const snapshot = await snapshotCapKeys(user.id);
    await rewardAll(user.id, ads(3, 5));
    await loseWritesSince(user.id, snapshot);
    expect(await counter(user.id)).toBe(10);

    expect(await reward(user.id, "ad-6")).toMatchObject({ kind: "response", replayed: false });
    expect(await creditedRewardsMinor(user.id, DAY)).toBe(30);
    expect(await counter(user.id)).toBe(30); // not 15: the confirm raised it to the ledger's total
    expect((await audit(user.id)).ok).toBe(true);
  });

  it("a counter that lost writes and sees no further reward is raised back by the reconciler's repair", async () => {
    const user = await createTestUser();
    await rewardAll(user.id, ads(1, 1));
    const snapshot = await snapshotCapKeys(user.id);
    await rewardAll(user.id, ads(2, 3));
    await loseWritesSince(user.id, snapshot);
    expect(await counter(user.id)).toBe(5);
    // Invariant 7.3 sees the loss: the counter is below what the ledger credited.
    expect((await audit(user.id)).ok).toBe(false);

    const repaired = await repairRewardCounters({ userIds: [user.id], capStore: redis.store });
    expect(repaired).toEqual({ examined: 1, raised: 1 });
    expect(await counter(user.id)).toBe(15);
    expect((await audit(user.id)).ok).toBe(true);
    // A second pass finds nothing to raise.
    expect(await repairRewardCounters({ userIds: [user.id], capStore: redis.store })).toEqual({
      examined: 1,
      raised: 0,
    });
  });

  it("a repair that already counted a credit is not counted again when its lost reservation is confirmed", async () => {
    const userId = `lost_${randomUUID().slice(0, 12)}`;
    const operation = {
      userId,
      day: DAY,
      adId: "ad-1",
      attemptId: randomUUID(),
      keysExpireAtS: capKeysExpireAtS(DAY, "UTC"),
    };
    const fresh = new RedisRewardCapStore(redis.client, { seedMinor: async () => 0 });
    expect(await fresh.reserve(operation, 5, 50)).toMatchObject({ kind: "reserved", counterMinor: 5 });
    // The failover loses the reservation (both keys, one script's writes) but keeps an older counter of 0...
    await redis.admin.del(capOperationKey(userId, DAY, "ad-1"));
    await redis.admin.set(capCounterKey(userId, DAY), "0", "KEEPTTL");
    // ... the credit commits (ledger total 5), the reconciler's repair raises the counter to it, then the request
    // is confirmed: the credit is in the counter once.
    expect(await fresh.raiseCounter(userId, DAY, 5, operation.keysExpireAtS)).toEqual({
      raised: true,
      counterMinor: 0,
    });
    expect(await fresh.confirm(operation, 5, 5)).toEqual({ kind: "recounted" });
    expect(await counter(userId)).toBe(5);
    // Negative control: the same sequence confirmed without the ledger total counts the credit twice (INCRBY, the
    // pre-issue-11 behaviour, kept for when no total is known: over-counting only refuses a reward).
    const other = { ...operation, adId: "ad-2", attemptId: randomUUID() };
    await fresh.reserve(other, 5, 50);
    await redis.admin.del(capOperationKey(userId, DAY, "ad-2"));
    await redis.admin.set(capCounterKey(userId, DAY), "5", "KEEPTTL");
    await fresh.raiseCounter(userId, DAY, 10, operation.keysExpireAtS);
    expect(await fresh.confirm(other, 5)).toEqual({ kind: "recounted" });
    expect(await counter(userId)).toBe(15);
  });

  it("concurrent credits against a counter that lost everything: PostgreSQL lets exactly what fits through", async () => {
    const user = await createTestUser();
    await rewardAll(user.id, ads(1, 9)); // 45 of 50
    await redis.admin.set(capCounterKey(user.id, DAY), "0", "KEEPTTL");
    const results = await Promise.all(ads(10, 29).map((adId) => reward(user.id, adId)));
    const credited = results.filter((result) => result.kind === "response");
    expect(credited).toHaveLength(1);
    expect(await creditedRewardsMinor(user.id, DAY)).toBe(50);
    const row = await testPool().query<{ credited_minor: string }>(
      "SELECT credited_minor::text FROM reward_cap_days WHERE user_id = $1 AND day = $2",
      [user.id, DAY],
    );
    expect(row.rows[0]?.credited_minor).toBe("50");
    expect(await counter(user.id)).toBe(50);
  });

  it("negative control: without the PostgreSQL cap the same lost writes let the day pass the cap, and the audit says so", async () => {
    const user = await createTestUser();
    await rewardAll(user.id, ads(1, 6), false);
    const snapshot = await snapshotCapKeys(user.id);
    await rewardAll(user.id, ads(7, 10), false);
    await loseWritesSince(user.id, snapshot);

    const passed = await reward(user.id, "ad-11", false);
    expect(passed).toMatchObject({ kind: "response", replayed: false });
    expect(await creditedRewardsMinor(user.id, DAY)).toBe(55);
    const check = await audit(user.id);
    expect(check.ok).toBe(false);
    expect(check.violations.join("\n")).toMatch(/rewards credited 55 exceed the daily cap 50/);
  });
});
