/**
 * The app's Redis code on a real Redis Cluster (docs/development.md note 28): 3 masters and 3 replicas of apt's
 * redis-server, and the ioredis Cluster client that lib/redis.ts builds when REDIS_CLUSTER_NODES is set. The cap
 * store's scripts run on keys sharing the user's `{hash tag}`, the audit's key walk covers every master, a reward is
 * credited end to end, and the replay copy works. Negative control: the same kind of script over two users' keys
 * (no shared tag) is refused with CROSSSLOT, which is what the hash tags avoid.
 */
import { randomUUID } from "node:crypto";
import type { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cacheStoredResponse, readCachedReplay } from "../../lib/ledger/replay-cache";
import { operationKey } from "../../lib/ledger/keys";
import { createClusterClient, ensureRedisConnected, parseClusterNodes } from "../../lib/redis";
import { capCounterKey, capKeysExpireAtS, RedisRewardCapStore, type CapOperation } from "../../lib/rewards/cap-store";
import { creditReward } from "../../lib/rewards/credit-reward";
import { startRedisCluster, type RedisCluster } from "../../scripts/lib/redis-cluster";
import { createTestUser } from "../helpers/db";

const DAY = "2026-11-30";
let cluster: RedisCluster;
let client: Cluster;

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
  client = createClusterClient(parseClusterNodes(cluster.seeds));
  client.on("error", () => {});
  await ensureRedisConnected(client);
}, 120_000);

afterAll(async () => {
  client?.disconnect();
  await cluster?.stop();
});

const operation = (userId: string, adId: string): CapOperation => ({
  userId,
  day: DAY,
  adId,
  attemptId: randomUUID(),
  keysExpireAtS: capKeysExpireAtS(DAY, "UTC"),
});

describe("the reward cap store on a Redis Cluster", () => {
  it("reserve, confirm and release run on every master; the audit's key walk finds every user's counter", async () => {
    const store = new RedisRewardCapStore(client, { seedMinor: async () => 0 });
    const users = Array.from({ length: 24 }, (_, i) => `cluster_user_${i}_${randomUUID().slice(0, 8)}`);
    for (const userId of users) {
      const kept = operation(userId, "ad-1");
      expect(await store.reserve(kept, 5, 50)).toEqual({ kind: "reserved", counterMinor: 5 });
      expect(await store.confirm(kept, 5)).toEqual({ kind: "confirmed" });
      const dropped = operation(userId, "ad-2");
      expect(await store.reserve(dropped, 5, 50)).toEqual({ kind: "reserved", counterMinor: 10 });
      expect(await store.release(dropped)).toEqual({ kind: "released" });
      expect((await store.readDay(userId, DAY)).counterMinor).toBe(5);
    }
    // The users' keys really are spread over several masters, so a walk of one node would miss some.
    const mastersHoldingKeys = (
      await Promise.all(client.nodes("master").map(async (node) => (await node.dbsize()) > 0))
    ).filter(Boolean);
    expect(mastersHoldingKeys.length).toBeGreaterThanOrEqual(2);
    const listed = new Set((await store.listCounterDays()).map((entry) => entry.userId));
    for (const userId of users) expect(listed.has(userId)).toBe(true);
  });

  it("a reward is credited end to end with the Cluster store, and its counter lives in the user's slot", async () => {
    const user = await createTestUser();
    const store = new RedisRewardCapStore(client);
    const now = new Date(`${DAY}T10:00:00Z`);
    const result = await creditReward(
      { userId: user.id, adId: "ad-cluster", now },
      { capStore: store, rules: { amountMinor: 5, dailyCapMinor: 50, timeZone: "UTC", currency: "USD" } },
    );
    expect(result).toMatchObject({ kind: "response", response: { status: 201 } });
    expect(await client.get(capCounterKey(user.id, DAY))).toBe("5");
  });

  it("the replay copy reads and writes through the Cluster client", async () => {
    const key = operationKey(`cluster_user_${randomUUID().slice(0, 8)}`, "payment", "order-1");
    const params = { amount: 100, currency: "USD" };
    await cacheStoredResponse(key, params, { status: 201, body: '{"ok":true}' }, client);
    expect(await readCachedReplay(key, params, client)).toEqual({
      kind: "replay",
      response: { status: 201, body: '{"ok":true}' },
    });
  });

  it("negative control: a script over two users' keys (no shared hash tag) is refused with CROSSSLOT", async () => {
    const a = capCounterKey("cluster_user_a", DAY);
    // Pick a second user whose counter hashes to another slot than the first one's.
    let b = capCounterKey("cluster_user_b", DAY);
    for (let i = 0; (await client.call("CLUSTER", "KEYSLOT", b)) === (await client.call("CLUSTER", "KEYSLOT", a)); i++)
      b = capCounterKey(`cluster_user_b${i}`, DAY);
    await expect(client.eval("return redis.call('GET', KEYS[1])", 2, a, b)).rejects.toThrow(/CROSSSLOT/);
    // The same two-key script over one user's counter and operation hash runs: they share the `{user}` tag.
    const sameUser = `${a}:op:ad-1`;
    await expect(client.eval("return redis.call('GET', KEYS[1])", 2, a, sameUser)).resolves.toBeNull();
  });
});
