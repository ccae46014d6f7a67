/**
 * The cap store's Lua scripts on a real, private redis-server (contract section 6; cases C06 and C13):
 * idempotent reserve / release / settle with tombstones, shared reservations of concurrent duplicates,
 * seeding with SET NX, key expiry, and garbage refused.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  capCounterKey,
  capKeysExpireAtS,
  capOperationKey,
  CapStoreUnavailableError,
  RedisRewardCapStore,
  type CapOperation,
} from "../../lib/rewards/cap-store";
import { deferred, startOwnRedis, type OwnRedis } from "../helpers/rewards";

const DAY = "2026-03-14";
const AMOUNT_MINOR = 5;
const CAP_MINOR = 50;

let own: OwnRedis;

beforeAll(async () => {
  // Seeds are 0 unless a test says otherwise: these tests exercise Redis alone.
  own = await startOwnRedis({ seedMinor: async () => 0 });
});

afterAll(async () => {
  await own?.stop();
});

function operation(userId: string, adId: string, attemptId: string = randomUUID()): CapOperation {
  return { userId, day: DAY, adId, attemptId, keysExpireAtS: capKeysExpireAtS(DAY, "UTC") };
}

async function counter(userId: string): Promise<string | null> {
  return await own.admin.get(capCounterKey(userId, DAY));
}

const freshUser = () => `user_${randomUUID().replaceAll("-", "")}`;

describe("reward cap store scripts", () => {
  it("reserve is idempotent per attempt: a resent reserve changes the counter once (C06)", async () => {
    const user = freshUser();
    const op = operation(user, "ad-1");
    expect(await own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR)).toEqual({ kind: "reserved", counterMinor: 5 });
    expect(await own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR)).toEqual({ kind: "already_reserved" });
    expect(await counter(user)).toBe("5");
  });

  it("release is idempotent: the second release is a no-op, and a reserve after its release changes nothing (tombstone)", async () => {
    const user = freshUser();
    const op = operation(user, "ad-1");
    await own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR);
    expect(await own.store.release(op)).toEqual({ kind: "released" });
    expect(await own.store.release(op)).toEqual({ kind: "noop" });
    expect(await own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR)).toEqual({ kind: "after_release" });
    expect(await counter(user)).toBe("0");
  });

  it("C06: a release that runs before its reserve leaves a tombstone, and the late reserve changes nothing", async () => {
    const user = freshUser();
    const op = operation(user, "ad-1");
    expect(await own.store.release(op)).toEqual({ kind: "tombstoned" });
    expect(await own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR)).toEqual({ kind: "after_release" });
    expect(await own.store.release(op)).toEqual({ kind: "noop" });
    // The counter was seeded by nobody: the late reserve did not even seed it.
    expect(await counter(user)).toBeNull();
    // A new attempt of the same operation (a user's retry after the 503) reserves normally.
    expect(await own.store.reserve(operation(user, "ad-1"), AMOUNT_MINOR, CAP_MINOR)).toEqual({
      kind: "reserved",
      counterMinor: 5,
    });
  });

  it("settle keeps the amount counted; a release after settle and a second settle change nothing", async () => {
    const user = freshUser();
    const op = operation(user, "ad-1");
    await own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR);
    expect(await own.store.settle(op, AMOUNT_MINOR)).toEqual({ kind: "settled" });
    expect(await own.store.settle(op, AMOUNT_MINOR)).toEqual({ kind: "noop" });
    expect(await own.store.release(op)).toEqual({ kind: "noop" });
    expect(await counter(user)).toBe("5");
    expect(await own.admin.hget(capOperationKey(user, DAY, "ad-1"), "state")).toBe("settled");
  });

  it("concurrent duplicates of one operation share one reservation, given back only by the last holder", async () => {
    const user = freshUser();
    const first = operation(user, "ad-1");
    const second = operation(user, "ad-1");
    expect(await own.store.reserve(first, AMOUNT_MINOR, CAP_MINOR)).toEqual({ kind: "reserved", counterMinor: 5 });
    expect(await own.store.reserve(second, AMOUNT_MINOR, CAP_MINOR)).toEqual({ kind: "already_reserved" });
    expect(await counter(user)).toBe("5");
    expect(await own.store.release(first)).toEqual({ kind: "shared" });
    expect(await counter(user)).toBe("5");
    expect(await own.store.release(second)).toEqual({ kind: "released" });
    expect(await counter(user)).toBe("0");
  });

  it("a duplicate that loses the claim race releases without taking back the winner's settled credit", async () => {
    const user = freshUser();
    const winner = operation(user, "ad-1");
    const loser = operation(user, "ad-1");
    await own.store.reserve(winner, AMOUNT_MINOR, CAP_MINOR);
    await own.store.reserve(loser, AMOUNT_MINOR, CAP_MINOR);
    await own.store.settle(winner, AMOUNT_MINOR);
    expect(await own.store.release(loser)).toEqual({ kind: "kept_settled" });
    expect(await counter(user)).toBe("5");
  });

  it("C13 at script level: 50 parallel reserves of 5 at 45 of 50, exactly one fits", async () => {
    const user = freshUser();
    await own.admin.set(capCounterKey(user, DAY), "45");
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) => own.store.reserve(operation(user, `ad-${i}`), AMOUNT_MINOR, CAP_MINOR)),
    );
    expect(outcomes.filter((o) => o.kind === "reserved")).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === "over_cap")).toHaveLength(49);
    expect(await counter(user)).toBe("50");
  });

  it("seeds a missing counter with SET NX before the first reservation: a late seeder never erases reservations", async () => {
    const user = freshUser();
    const slowSeedRead = deferred();
    let seedReads = 0;
    const store = new RedisRewardCapStore(own.client, {
      seedMinor: async () => {
        seedReads += 1;
        // The first seeder read the ledger (20) and then stalls; the second seeds and reserves meanwhile.
        if (seedReads === 1) await slowSeedRead.promise;
        return 20;
      },
    });
    const late = store.reserve(operation(user, "ad-late"), AMOUNT_MINOR, CAP_MINOR);
    await expect.poll(() => seedReads).toBe(1);
    expect(await store.reserve(operation(user, "ad-early"), AMOUNT_MINOR, CAP_MINOR)).toEqual({
      kind: "reserved",
      counterMinor: 25,
    });
    slowSeedRead.resolve();
    // SET NX refused the late seed (20), so the early reservation (25) survives and the late one adds to it.
    expect(await late).toEqual({ kind: "reserved", counterMinor: 30 });
    expect(await counter(user)).toBe("30");
  });

  it("the day's keys expire a grace period after the local day ends", async () => {
    const user = freshUser();
    const op = operation(user, "ad-1");
    await own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR);
    const expected = capKeysExpireAtS(DAY, "UTC");
    expect(await own.admin.call("EXPIRETIME", capCounterKey(user, DAY))).toBe(expected);
    expect(await own.admin.call("EXPIRETIME", capOperationKey(user, DAY, "ad-1"))).toBe(expected);
    // A day long past still gets keys that live the grace period from now, never an expiry in the past.
    expect(capKeysExpireAtS("2000-01-01", "UTC")).toBeGreaterThan(Date.now() / 1000);
  });

  it("garbage at the counter key is refused by every script, which writes nothing", async () => {
    const user = freshUser();
    const op = operation(user, "ad-1");
    for (const garbage of ["banana", "12abc", "-5", "1.5", "9".repeat(16)]) {
      await own.admin.set(capCounterKey(user, DAY), garbage);
      const refused = own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR);
      await expect(refused).rejects.toBeInstanceOf(CapStoreUnavailableError);
      await expect(refused).rejects.toMatchObject({ reason: "rejected" });
      await expect(own.store.settle(op, AMOUNT_MINOR)).rejects.toMatchObject({ reason: "rejected" });
      expect(await own.admin.exists(capOperationKey(user, DAY, "ad-1"))).toBe(0);
    }
    // Another type at the key (WRONGTYPE) is refused the same way.
    await own.admin.del(capCounterKey(user, DAY));
    await own.admin.rpush(capCounterKey(user, DAY), "5");
    await expect(own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR)).rejects.toMatchObject({ reason: "rejected" });
    await expect(own.store.readDay(user, DAY)).rejects.toMatchObject({ reason: "rejected" });
  });

  it("a store without Redis fails closed with reason off", async () => {
    const store = new RedisRewardCapStore(null);
    await expect(store.reserve(operation(freshUser(), "ad-1"), AMOUNT_MINOR, CAP_MINOR)).rejects.toMatchObject({
      name: "CapStoreUnavailableError",
      reason: "off",
    });
  });

  it("readDay reads the counter and each operation's state", async () => {
    const user = freshUser();
    const settled = operation(user, "ad-settled");
    const held = operation(user, "ad-held");
    await own.store.reserve(settled, AMOUNT_MINOR, CAP_MINOR);
    await own.store.settle(settled, AMOUNT_MINOR);
    await own.store.reserve(held, AMOUNT_MINOR, CAP_MINOR);
    const state = await own.store.readDay(user, DAY);
    expect(state.counterMinor).toBe(10);
    const byAd = Object.fromEntries(state.operations.map((o) => [o.adId, o]));
    expect(byAd["ad-settled"]).toMatchObject({ state: "settled", amountMinor: 5 });
    expect(byAd["ad-held"]).toMatchObject({ state: "reserved", amountMinor: 5, holders: 1 });
    expect(await own.store.listCounterDays()).toContainEqual({ userId: user, day: DAY });
  });
});
