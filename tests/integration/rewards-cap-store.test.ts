/**
 * The cap store's Lua scripts on a real, private redis-server (contract section 6; cases C06 and C13):
 * idempotent reserve / release / confirm with tombstones, shared reservations of concurrent duplicates,
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

  it("confirm keeps the amount counted; a release after confirm and a second confirm change nothing", async () => {
    const user = freshUser();
    const op = operation(user, "ad-1");
    await own.store.reserve(op, AMOUNT_MINOR, CAP_MINOR);
    expect(await own.store.confirm(op, AMOUNT_MINOR)).toEqual({ kind: "confirmed" });
    expect(await own.store.confirm(op, AMOUNT_MINOR)).toEqual({ kind: "noop" });
    expect(await own.store.release(op)).toEqual({ kind: "noop" });
    expect(await counter(user)).toBe("5");
    expect(await own.admin.hget(capOperationKey(user, DAY, "ad-1"), "state")).toBe("confirmed");
  });

  it("a reservation confirmed before the rename (stored 'settled') reads as confirmed: kept, not garbage", async () => {
    // Keys written by the version that called confirming "settle" live until their day ends (decision 053).
    // Negative control: without cap_field's mapping the reserve below answers CAPGARBAGE (unknown state).
    const user = freshUser();
    const earlier = operation(user, "ad-1");
    const key = capOperationKey(user, DAY, "ad-1");
    await own.admin.set(capCounterKey(user, DAY), "5");
    await own.admin.hset(
      key,
      "state",
      "settled",
      "amount",
      "5",
      "holders",
      "0",
      "at",
      "0",
      `a:${earlier.attemptId}`,
      "settled",
    );
    const duplicate = operation(user, "ad-1");
    expect(await own.store.reserve(duplicate, AMOUNT_MINOR, CAP_MINOR)).toEqual({ kind: "already_reserved" });
    expect(await own.store.release(duplicate)).toEqual({ kind: "kept_confirmed" });
    expect(await own.store.confirm(earlier, AMOUNT_MINOR)).toEqual({ kind: "noop" });
    expect(await counter(user)).toBe("5");
    const day = await own.store.readDay(user, DAY);
    expect(day.operations.find((op) => op.adId === "ad-1")).toMatchObject({ state: "confirmed", amountMinor: 5 });
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

  it("a duplicate that loses the claim race releases without taking back the winner's confirmed credit", async () => {
    const user = freshUser();
    const winner = operation(user, "ad-1");
    const loser = operation(user, "ad-1");
    await own.store.reserve(winner, AMOUNT_MINOR, CAP_MINOR);
    await own.store.reserve(loser, AMOUNT_MINOR, CAP_MINOR);
    await own.store.confirm(winner, AMOUNT_MINOR);
    expect(await own.store.release(loser)).toEqual({ kind: "kept_confirmed" });
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
      await expect(own.store.confirm(op, AMOUNT_MINOR)).rejects.toMatchObject({ reason: "rejected" });
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
    const confirmed = operation(user, "ad-confirmed");
    const held = operation(user, "ad-held");
    await own.store.reserve(confirmed, AMOUNT_MINOR, CAP_MINOR);
    await own.store.confirm(confirmed, AMOUNT_MINOR);
    await own.store.reserve(held, AMOUNT_MINOR, CAP_MINOR);
    const state = await own.store.readDay(user, DAY);
    expect(state.counterMinor).toBe(10);
    const byAd = Object.fromEntries(state.operations.map((o) => [o.adId, o]));
    expect(byAd["ad-confirmed"]).toMatchObject({ state: "confirmed", amountMinor: 5 });
    expect(byAd["ad-held"]).toMatchObject({ state: "reserved", amountMinor: 5, holders: 1 });
    expect(await own.store.listCounterDays()).toContainEqual({ userId: user, day: DAY });
  });
});
