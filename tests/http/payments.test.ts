/**
 * Payments, the statement and in-flight duplicates over HTTP.
 */
import { describe, expect, it } from "vitest";
import { api, createApiUser } from "../helpers/http";
import { balanceOf, countRows, freshRefId, seedBalance } from "../helpers/ledger";
import { waitFor } from "../helpers/wait";

describe("POST /api/v1/payments", () => {
  it("201 with the payment, replayed byte for byte with Idempotent-Replayed", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 1000);
    const orderId = freshRefId("order");
    const first = await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 250 } });
    expect(first.status).toBe(201);
    expect(first.json.payment).toMatchObject({ orderId, amount: 250, currency: "USD", status: "succeeded" });
    const again = await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 250 } });
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await balanceOf(user.id)).toBe(750);
  });

  it("402 insufficient_funds is problem+json, stored, and replays as 402 after the balance grows", async () => {
    const user = await createApiUser();
    const orderId = freshRefId("order");
    const first = await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 50 } });
    expect(first.status).toBe(402);
    expect(first.headers.get("content-type")).toBe("application/problem+json");
    expect(first.json).toMatchObject({
      code: "insufficient_funds",
      status: 402,
      type: expect.any(String),
      title: expect.any(String),
      detail: expect.any(String),
    });
    await seedBalance(user.id, 100);
    const again = await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 50 } });
    expect(again.status).toBe(402);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await balanceOf(user.id)).toBe(100);
  });

  it("same order id, another amount: 422 with the field; nothing debited", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 100);
    const orderId = freshRefId("order");
    await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 10 } });
    const other = await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 11 } });
    expect(other.status).toBe(422);
    expect(other.json).toMatchObject({ code: "idempotency_key_reused", fields: ["amount"] });
    expect(await balanceOf(user.id)).toBe(90);
  });

  it("payee and note (decision 055): named in the 201, fingerprinted like the amount, validated before any work", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 1000);
    const orderId = freshRefId("order");
    const body = { orderId, amount: 250, payee: "Corner Coffee", note: "Two flat whites" };
    const first = await api("/api/v1/payments", { token: user.token, body });
    expect(first.status).toBe(201);
    expect(first.json.payment).toMatchObject({ orderId, payee: "Corner Coffee", note: "Two flat whites", amount: 250 });
    const identical = await api("/api/v1/payments", { token: user.token, body });
    expect(identical.status).toBe(201);
    expect(identical.text).toBe(first.text);
    expect(identical.headers.get("idempotent-replayed")).toBe("true");
    for (const [other, fields] of [
      [{ ...body, payee: "City Books" }, ["payee"]],
      [{ ...body, note: "One flat white" }, ["note"]],
      [{ orderId, amount: 250 }, ["note", "payee"]],
      [{ ...body, amount: 251 }, ["amount"]],
    ] as const) {
      const refused = await api("/api/v1/payments", { token: user.token, body: other });
      expect(refused.status).toBe(422);
      expect(refused.json).toMatchObject({ code: "idempotency_key_reused", fields });
    }
    expect(await balanceOf(user.id)).toBe(750);
    // Bounded and readable, refused with 400 before anything is written.
    for (const bad of [
      { payee: "" },
      { payee: "x".repeat(81) },
      { payee: " padded" },
      { payee: "line\nbreak" },
      { payee: "\u202eevil" },
      { payee: 7 },
      { note: "n".repeat(141) },
      { note: "\u0000" },
    ]) {
      const badOrder = freshRefId("order");
      const refused = await api("/api/v1/payments", {
        token: user.token,
        body: { orderId: badOrder, amount: 1, ...bad },
      });
      expect(refused.status, JSON.stringify(bad)).toBe(400);
      expect(await countRows(user.id, "payment", badOrder)).toBe(0);
    }
    const longest = await api("/api/v1/payments", {
      token: user.token,
      body: { orderId: freshRefId("order"), amount: 1, payee: "é".repeat(80), note: "n".repeat(140) },
    });
    expect(longest.status).toBe(201);
  });

  it("validation (C07) runs before any database work: no row for a bad amount or order id", async () => {
    const user = await createApiUser();
    const orderId = freshRefId("order");
    expect(
      (await api("/api/v1/payments", { token: user.token, rawBody: `{"orderId":"${orderId}","amount":1e3}` })).status,
    ).toBe(400);
    expect((await api("/api/v1/payments", { token: user.token, body: { orderId: "bad id", amount: 5 } })).status).toBe(
      400,
    );
    expect(await countRows(user.id, "payment", orderId)).toBe(0);
  });
});

describe("GET /api/v1/entries", () => {
  it("lists every movement of the caller, newest first, credits and debits with their status", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 100);
    const paid = freshRefId("order");
    const refused = freshRefId("order");
    await api("/api/v1/payments", { token: user.token, body: { orderId: paid, amount: 60 } });
    await api("/api/v1/payments", { token: user.token, body: { orderId: refused, amount: 60 } });
    const listed = await api("/api/v1/entries?limit=10", { token: user.token });
    expect(listed.status).toBe(200);
    expect(
      listed.json.entries.map((e: { refId: string; status: string; type: string }) => [e.type, e.refId, e.status]),
    ).toEqual([
      ["payment", refused, "failed"],
      ["payment", paid, "succeeded"],
    ]);
    expect(listed.json.entries[0]).toMatchObject({ amount: 60, currency: "USD", failureReason: "insufficient_funds" });
  });
});

describe("in-flight duplicates (contract section 3)", () => {
  it("a duplicate of a slow top-up waits, then gets 409 request_in_progress with Retry-After; a mismatch is refused at once; the retry replays", async () => {
    const user = await createApiUser();
    // sbx-slow-: the sandbox bank answers after BANK_SLOW_MS (5 s), longer than IDEMPOTENCY_WAIT_MS (3 s).
    const refId = freshRefId("sbx-slow-inflight");
    const first = api("/api/v1/topups", { token: user.token, body: { refId, amount: 300 } });
    // Wait until the first request's claim is visible, so the duplicates below are losers for sure.
    await waitFor(
      () => countRows(user.id, "topup", refId),
      (rows) => rows > 0,
      { what: "the first request to claim" },
    );
    const mismatchStarted = Date.now();
    const mismatch = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 301 } });
    expect(mismatch.status).toBe(422);
    expect(Date.now() - mismatchStarted).toBeLessThan(2_000);

    const duplicate = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 300 } });
    expect(duplicate.status).toBe(409);
    expect(duplicate.json).toMatchObject({ code: "request_in_progress" });
    expect(Number(duplicate.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    const original = await first;
    expect(original.status).toBe(201);
    const retry = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 300 } });
    expect(retry.status).toBe(201);
    expect(retry.text).toBe(original.text);
    expect(await countRows(user.id, "topup", refId)).toBe(1);
  }, 30_000);
});

describe("replays with and without the Redis copy", () => {
  it("the replay is byte-identical whether it comes from Redis or, with the copy deleted, from PostgreSQL", async () => {
    const { default: Redis } = await import("ioredis");
    const { testStack } = await import("../helpers/stack");
    const { replayCacheKey } = await import("../../lib/ledger/replay-cache");
    const user = await createApiUser();
    await seedBalance(user.id, 100);
    const orderId = freshRefId("order");
    const first = await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 30 } });
    const redis = new Redis(testStack().redisUrl, { maxRetriesPerRequest: 1 });
    try {
      const cacheKey = replayCacheKey({ userId: user.id, type: "payment", refId: orderId });
      expect(await redis.exists(cacheKey)).toBe(1);
      const fromCopy = await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 30 } });
      await redis.del(cacheKey);
      const fromLedger = await api("/api/v1/payments", { token: user.token, body: { orderId, amount: 30 } });
      for (const replay of [fromCopy, fromLedger]) {
        expect(replay.status).toBe(201);
        expect(replay.text).toBe(first.text);
        expect(replay.headers.get("idempotent-replayed")).toBe("true");
      }
      // The ledger's replay wrote the copy back.
      expect(await redis.exists(cacheKey)).toBe(1);
      expect(await balanceOf(user.id)).toBe(70);
    } finally {
      redis.disconnect();
    }
  });
});
