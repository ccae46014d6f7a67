/**
 * Rewards with the app's own Redis configuration (REDIS_URL, lib/redis.ts, the default cap store) pointing at a
 * redis-server that this file starts and then stops (contract section 6: "Redis unreachable: rewards fail closed
 * with 503 cap_store_unavailable; top-ups and payments keep working").
 *
 * lib/env.ts parses the environment once per process, so REDIS_URL is set before any lib module reads it, and
 * the lib modules are imported only after that. The previous value is restored at the end.
 */
import Redis from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRedisServer, type RedisServer } from "../../scripts/lib/redis-server";
import { createTestUser } from "../helpers/db";
import { balanceOf } from "../helpers/ledger";
import { rewardRowCount } from "../helpers/rewards";

let server: RedisServer;
const previousRedisUrl = process.env.REDIS_URL;

type Lib = typeof import("../../lib/rewards/credit-reward") &
  typeof import("../../lib/payments/create-payment") &
  typeof import("../../lib/rewards/cap-store") & {
    closeRedis: () => Promise<void>;
    closeDb: () => Promise<void>;
  };
let lib: Lib;

beforeAll(async () => {
  server = await startRedisServer();
  process.env.REDIS_URL = server.url;
  lib = {
    ...(await import("../../lib/rewards/credit-reward")),
    ...(await import("../../lib/payments/create-payment")),
    ...(await import("../../lib/rewards/cap-store")),
    closeRedis: (await import("../../lib/redis")).closeRedis,
    closeDb: (await import("../../lib/db")).closeDb,
  };
});

afterAll(async () => {
  await lib?.closeRedis();
  await lib?.closeDb();
  await server?.stop();
  process.env.REDIS_URL = previousRedisUrl;
});

describe("rewards through REDIS_URL when Redis goes down", () => {
  it("credits while Redis is up; after it stops, 503 cap_store_unavailable with no row, while a payment still succeeds", async () => {
    const user = await createTestUser();
    const credited = await lib.creditReward({ userId: user.id, adId: "ad-up" });
    expect(credited).toMatchObject({ kind: "response", replayed: false, response: { status: 201 } });
    // The reservation went to this file's server, through the app's own client.
    const probe = new Redis(server.url);
    try {
      const day = new Date().toISOString().slice(0, 10);
      expect(await probe.get(lib.capCounterKey(user.id, day))).toBe("5");
    } finally {
      probe.disconnect();
    }

    await server.stop();
    const refused = await lib.creditReward({ userId: user.id, adId: "ad-down" });
    expect(refused).toMatchObject({ kind: "refused", code: "cap_store_unavailable" });
    expect(await rewardRowCount(user.id)).toBe(1);

    const payment = await lib.createPayment({
      userId: user.id,
      orderId: `order-${user.id}`,
      amountMinor: 4,
      currency: "USD",
    });
    expect(payment).toMatchObject({ kind: "response", response: { status: 201 } });
    expect(await balanceOf(user.id)).toBe(1);

    // A replay of the reward credited before the outage needs no Redis (the row answers it).
    expect(await lib.creditReward({ userId: user.id, adId: "ad-up" })).toMatchObject({
      kind: "response",
      replayed: true,
    });
  });

  it("no Redis configured at all (a store without a client) is the same 503", async () => {
    const user = await createTestUser();
    const refused = await lib.creditReward(
      { userId: user.id, adId: "ad-off" },
      { capStore: new lib.RedisRewardCapStore(null) },
    );
    expect(refused).toMatchObject({ kind: "refused", code: "cap_store_unavailable" });
    expect(await rewardRowCount(user.id)).toBe(0);
  });
});
