/**
 * The limits of contract section 9 against the real Redis and PostgreSQL of the test stack: failed-password
 * throttles (C22: a throttled pair never locks the owner out), the sign-up limit, new-operation counting
 * (OPS_PER_MINUTE, duplicates count once), the degradation when Redis is down, and the API token cap.
 * Each test uses its own emails, addresses and users, so files running in parallel do not share counters.
 */
import { createHash, randomUUID } from "node:crypto";
import Redis from "ioredis";
import { describe, expect, it, vi } from "vitest";
import { createApiToken, createApiTokenOrThrow } from "../../lib/api-tokens/create-api-token";
import { findPrincipalByToken } from "../../lib/api-tokens/find-principal-by-token";
import { revokeAllApiTokens } from "../../lib/api-tokens/revoke-api-token";
import { env } from "../../lib/env";
import { operationKey } from "../../lib/ledger/keys";
import {
  beginPasswordAttempt,
  countSignUp,
  finishPasswordAttempt,
  PASSWORD_ADDRESS_RULE,
  PASSWORD_EMAIL_RULE,
  PASSWORD_PAIR_RULE,
} from "../../lib/limits/auth-throttles";
import { CounterLimiter } from "../../lib/limits/counter-limiter";
import { cacheStoredResponse, replayCacheKey } from "../../lib/ledger/replay-cache";
import {
  admitNewOperation,
  gateNewOperation,
  NEW_OPERATION_WINDOW_MS,
  newOperationRateKey,
} from "../../lib/limits/new-operation-rate";
import { redis } from "../../lib/redis";
import { createTestUser, testPool } from "../helpers/db";
import { testStack } from "../helpers/stack";

/** A fresh TEST-NET-3 style address per call (RFC 5737 ranges are never real clients). */
let addressCounter = 0;
function freshAddress(): string {
  addressCounter += 1;
  return `198.51.${Math.floor(Math.random() * 200)}.${addressCounter % 250}`;
}
const freshEmail = (label: string) => `${label}-${randomUUID()}@example.test`;

/** `count` failed attempts for `email` from `address`; returns how many were let through. */
async function failAttempts(email: string, address: string, count: number): Promise<number> {
  let allowed = 0;
  for (let i = 0; i < count; i++) {
    const decision = await beginPasswordAttempt(email, address);
    if (!decision.allowed) continue;
    allowed += 1;
    await finishPasswordAttempt(decision.attempt, false);
  }
  return allowed;
}

describe("failed password attempts (contract section 9, C22)", () => {
  it("allows 5 failures per (email, address), then refuses with the window's Retry-After", async () => {
    const email = freshEmail("pair");
    const address = freshAddress();
    expect(await failAttempts(email, address, PASSWORD_PAIR_RULE.points)).toBe(5);
    const refused = await beginPasswordAttempt(email.toUpperCase(), address);
    expect(refused.allowed).toBe(false);
    if (!refused.allowed) {
      expect(refused.retryAfterS).toBeGreaterThan(PASSWORD_PAIR_RULE.durationS - 60);
      expect(refused.retryAfterS).toBeLessThanOrEqual(PASSWORD_PAIR_RULE.durationS);
    }
    // The window is real: the counter's key lives for the rule's whole 15 minutes.
    const emailHash = createHash("sha256").update(email.toLowerCase(), "utf8").digest("hex");
    const ttlMs = await redis()!.pttl(`rl:${PASSWORD_PAIR_RULE.name}:${emailHash}:${address}`);
    expect(ttlMs).toBeGreaterThan((PASSWORD_PAIR_RULE.durationS - 60) * 1000);
  });

  it("never locks the owner out: the same email from another address, and other emails from the same address, go on", async () => {
    const owner = freshEmail("owner");
    const attacker = freshAddress();
    expect(await failAttempts(owner, attacker, 30)).toBe(5);
    const fromHome = await beginPasswordAttempt(owner, freshAddress());
    expect(fromHome.allowed).toBe(true);
    const otherEmail = await beginPasswordAttempt(freshEmail("other"), attacker);
    expect(otherEmail.allowed).toBe(true);
  });

  it("refunds a successful attempt, so only failures count", async () => {
    const email = freshEmail("refund");
    const address = freshAddress();
    expect(await failAttempts(email, address, 4)).toBe(4);
    for (let i = 0; i < 3; i++) {
      const success = await beginPasswordAttempt(email, address);
      if (!success.allowed) throw new Error("a fifth attempt must be allowed");
      await finishPasswordAttempt(success.attempt, true);
    }
    // Still one failure left in the window: the three successes took nothing.
    expect(await failAttempts(email, address, 2)).toBe(1);
  });

  it("allows 100 failures per address over any emails (password spraying), then refuses that address only", async () => {
    const address = freshAddress();
    let allowed = 0;
    for (let i = 0; i < PASSWORD_ADDRESS_RULE.points + 5; i++)
      allowed += await failAttempts(freshEmail("spray"), address, 1);
    expect(allowed).toBe(100);
    expect((await beginPasswordAttempt(freshEmail("spray"), freshAddress())).allowed).toBe(true);
  });

  it("allows 50 failures an hour per email from new addresses; an address the owner signed in from is exempt", async () => {
    const email = freshEmail("botnet");
    const home = freshAddress();
    const signIn = await beginPasswordAttempt(email, home);
    if (!signIn.allowed) throw new Error("first attempt refused");
    await finishPasswordAttempt(signIn.attempt, true);
    let allowed = 0;
    for (let i = 0; i < PASSWORD_EMAIL_RULE.points + 5; i++) allowed += await failAttempts(email, freshAddress(), 1);
    expect(allowed).toBe(50);
    expect((await beginPasswordAttempt(email, freshAddress())).allowed).toBe(false);
    expect((await beginPasswordAttempt(email, home)).allowed).toBe(true);
  });

  it("counts 20 concurrent guesses on one pair as 20: exactly 5 get through", async () => {
    const email = freshEmail("burst");
    const address = freshAddress();
    const decisions = await Promise.all(Array.from({ length: 20 }, () => beginPasswordAttempt(email, address)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
  });
});

describe("sign-ups per address", () => {
  it("allows SIGNUPS_PER_HOUR per address in an hour-long window, and other addresses are not affected", async () => {
    const address = freshAddress();
    const limit = env().SIGNUPS_PER_HOUR;
    const outcomes = [];
    for (let i = 0; i < limit + 2; i++) outcomes.push(await countSignUp(address));
    expect(outcomes.filter((o) => o.allowed)).toHaveLength(limit);
    const refused = outcomes[limit];
    expect(refused?.allowed).toBe(false);
    if (refused && !refused.allowed) expect(refused.retryAfterS).toBeGreaterThan(3500);
    expect(await redis()!.pttl(`rl:signup-address:${address}`)).toBeGreaterThan(3500_000);
    expect((await countSignUp(freshAddress())).allowed).toBe(true);
  });
});

describe("a limit store that is down (docs/decisions/010)", () => {
  it("decides in the process's memory with the same rule, and never lets an attempt through unlimited", async () => {
    // A client on a port where nothing listens, failing at once (no offline queue), like lib/redis.ts's.
    const dead = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    dead.on("error", () => {});
    try {
      const limiter = new CounterLimiter({ name: `down-${randomUUID()}`, points: 3, durationS: 60 }, () => dead);
      const outcomes = [];
      for (let i = 0; i < 5; i++) outcomes.push(await limiter.count("k"));
      expect(outcomes.map((o) => o.allowed)).toEqual([true, true, true, false, false]);
    } finally {
      dead.disconnect();
    }
  });
});

describe("OPS_PER_MINUTE: new operations counted once per key (contract section 9)", () => {
  it("counts 500 concurrent copies of one new key once, and refuses none of them", async () => {
    const key = operationKey(randomUUID(), "payment", `order-${randomUUID()}`);
    const decisions = await Promise.all(Array.from({ length: 500 }, () => admitNewOperation(key)));
    expect(decisions.every((d) => d.allowed)).toBe(true);
    expect(await redis()!.zcard(newOperationRateKey(key))).toBe(1);
  });

  it("admits OPS_PER_MINUTE distinct keys a minute per user and type, then refuses with Retry-After", async () => {
    const userId = randomUUID();
    const limit = env().OPS_PER_MINUTE;
    const keys = Array.from({ length: limit + 20 }, (_, i) => operationKey(userId, "payment", `order-${i}`));
    const decisions = await Promise.all(keys.map((key) => admitNewOperation(key)));
    const refused = decisions.filter((d) => !d.allowed);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(limit);
    expect(refused).toHaveLength(20);
    for (const d of refused) {
      if (!d.allowed) {
        expect(d.retryAfterS).toBeGreaterThanOrEqual(1);
        expect(d.retryAfterS).toBeLessThanOrEqual(NEW_OPERATION_WINDOW_MS / 1000);
      }
    }
    // An admitted key asked again is still admitted (idempotent), and other types and users are separate.
    expect((await admitNewOperation(keys[0]!)).allowed).toBe(true);
    expect((await admitNewOperation(operationKey(userId, "topup", "order-999"))).allowed).toBe(true);
    expect((await admitNewOperation(operationKey(randomUUID(), "payment", "order-999"))).allowed).toBe(true);
  });

  /** Runs `work` and returns its result with the names of the Redis commands the process's client sent meanwhile. */
  async function withRedisCommands<T>(work: () => Promise<T>): Promise<{ result: T; commands: string[] }> {
    const client = redis()!;
    await client.ping(); // connected before counting
    const spy = vi.spyOn(client, "sendCommand");
    try {
      const result = await work();
      return { result, commands: spy.mock.calls.map(([command]) => command.name.toLowerCase()) };
    } finally {
      spy.mockRestore();
    }
  }
  const params = { amount: 100, currency: "USD" };

  it("the gate reads the replay copy and counts a new key in one round trip", async () => {
    const key = operationKey(randomUUID(), "payment", `order-${randomUUID()}`);
    const { result, commands } = await withRedisCommands(() => gateNewOperation(key, params));
    expect(result).toEqual({ kind: "proceed" });
    expect(commands).toHaveLength(1);
    expect(commands[0]).toMatch(/^eval(sha)?$/);
    expect(await redis()!.zscore(newOperationRateKey(key), key.refId)).not.toBeNull();
  });

  it("a key with a replay copy is answered from it in the same round trip and is not counted, even past the limit", async () => {
    const userId = randomUUID();
    const stored = operationKey(userId, "payment", "order-stored");
    const response = { status: 201, body: '{"payment":{"orderId":"order-stored"}}' };
    await cacheStoredResponse(stored, params, response);
    // The user's window is full of other new keys.
    const limit = env().OPS_PER_MINUTE;
    for (let i = 0; i < limit; i++) await admitNewOperation(operationKey(userId, "payment", `order-${i}`));
    const { result, commands } = await withRedisCommands(() => gateNewOperation(stored, params));
    expect(result).toEqual({ kind: "cached", outcome: { kind: "replay", response } });
    expect(commands).toHaveLength(1);
    expect(await redis()!.zscore(newOperationRateKey(stored), stored.refId)).toBeNull();
    expect(await gateNewOperation(stored, { amount: 1, currency: "USD" })).toEqual({
      kind: "cached",
      outcome: { kind: "mismatch", fields: ["amount"] },
    });
    // A new key with no row, past the limit: refused.
    expect(await gateNewOperation(operationKey(userId, "payment", "order-new"), params)).toMatchObject({
      kind: "rate_limited",
    });
  });

  it("a replay copy that is not a record is ignored, and the key is still counted", async () => {
    const key = operationKey(randomUUID(), "topup", `t-${randomUUID()}`);
    await redis()!.set(replayCacheKey(key), "not json");
    expect(await gateNewOperation(key, params)).toEqual({ kind: "proceed" });
    expect(await redis()!.zscore(newOperationRateKey(key), key.refId)).not.toBeNull();
  });

  it("lets operations go on when the store holds garbage (the ledger is the guarantee)", async () => {
    const key = operationKey(randomUUID(), "topup", "t-1");
    await redis()!.set(newOperationRateKey(key), "not a sorted set");
    expect(await admitNewOperation(key)).toEqual({ allowed: true });
  });
});

describe("personal API tokens: cap and expiry (contract section 9)", () => {
  it("creates at most TOKENS_PER_USER_MAX active tokens even when 25 are created at once", async () => {
    const user = await createTestUser();
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) => createApiToken({ userId: user.id, name: `t${i}` })),
    );
    const max = env().TOKENS_PER_USER_MAX;
    expect(results.filter((r) => r.kind === "created")).toHaveLength(max);
    expect(results.filter((r) => r.kind === "limit_reached")).toHaveLength(25 - max);
    // Revoking frees room; revoked and expired tokens do not count.
    expect(await revokeAllApiTokens(user.id)).toBe(max);
    expect((await createApiToken({ userId: user.id, name: "after revoke" })).kind).toBe("created");
  });

  it("gives a token an expiry when asked, and an expired token stops authenticating and counting", async () => {
    const user = await createTestUser();
    const created = await createApiTokenOrThrow({ userId: user.id, name: "week", expiresInDays: 7 });
    const expectedMs = Date.now() + 7 * 24 * 3600 * 1000;
    expect(Math.abs((created.expiresAt?.getTime() ?? 0) - expectedMs)).toBeLessThan(60_000);
    expect(await findPrincipalByToken(created.token)).not.toBeNull();
    // Move the expiry into the past (as time would), keeping it after the creation (the table's CHECK).
    await testPool().query(
      `UPDATE api_tokens SET created_at = now() - interval '2 days', expires_at = now() - interval '1 day' WHERE id = $1`,
      [created.id],
    );
    expect(await findPrincipalByToken(created.token)).toBeNull();
    const never = await createApiTokenOrThrow({ userId: user.id, name: "forever" });
    expect(never.expiresAt).toBeNull();
    await expect(createApiToken({ userId: user.id, name: "odd", expiresInDays: 3 as never })).rejects.toThrow(
      RangeError,
    );
  });
});

it("runs against the test stack's Redis", () => {
  expect(env().REDIS_URL).toBe(testStack().redisUrl);
});
