/**
 * The top-up route end to end: real app, real sandbox bank, real PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { createTestUser } from "../helpers/db";
import { api, bankChargesFor, createApiUser, signWebhookBody, waitForTopupStatus } from "../helpers/http";
import { balanceOf, countRows, freshRefId } from "../helpers/ledger";

describe("POST /api/v1/topups", () => {
  it("C02/C10: 20 concurrent identical top-ups: one row, one bank charge, one credit, 20 byte-identical responses", async () => {
    const user = await createApiUser();
    const refId = freshRefId("c10");
    const results = await Promise.all(
      Array.from({ length: 20 }, () => api("/api/v1/topups", { token: user.token, body: { refId, amount: 2500 } })),
    );
    const statuses = new Set(results.map((r) => r.status));
    const bodies = new Set(results.map((r) => r.text));
    expect([...statuses]).toEqual([201]);
    expect(bodies.size).toBe(1);
    expect(results.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(19);
    expect(results[0]!.json.topup).toMatchObject({ refId, amount: 2500, currency: "USD" });
    expect(await countRows(user.id, "topup", refId)).toBe(1);
    const done = await waitForTopupStatus(user.token, refId);
    expect(done.status).toBe("succeeded");
    expect(await balanceOf(user.id)).toBe(2500);
    expect(await bankChargesFor(`topup:${user.id}:${refId}`)).toHaveLength(1);
    // A later replay is still the first response, byte for byte.
    const later = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 2500 } });
    expect(later.status).toBe(201);
    expect(later.text).toBe(results[0]!.text);
    expect(later.headers.get("idempotent-replayed")).toBe("true");
  });

  it("C02: the same top-up posted twice in a row replays the first response", async () => {
    const user = await createApiUser();
    const refId = freshRefId("c02");
    const first = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 100 } });
    const second = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 100 } });
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(second.status).toBe(201);
    expect(second.text).toBe(first.text);
    expect(second.headers.get("idempotent-replayed")).toBe("true");
  });

  it("C03: the first top-up on a database built only by the migrations is 201 with one row", async () => {
    const user = await createApiUser();
    const refId = freshRefId("c03");
    const result = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 700 } });
    expect(result.status).toBe(201);
    expect(result.headers.get("content-type")).toBe("application/json");
    expect(await countRows(user.id, "topup", refId)).toBe(1);
  });

  it("same refId with another amount: 422 idempotency_key_reused listing the field; nothing written", async () => {
    const user = await createApiUser();
    const refId = freshRefId("reuse");
    await api("/api/v1/topups", { token: user.token, body: { refId, amount: 100 } });
    const other = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 101 } });
    expect(other.status).toBe(422);
    expect(other.headers.get("content-type")).toBe("application/problem+json");
    expect(other.json).toMatchObject({ code: "idempotency_key_reused", status: 422, fields: ["amount"] });
    expect(await countRows(user.id, "topup", refId)).toBe(1);
  });

  const badAmounts: [string, string][] = [
    ["empty string", '""'],
    ["blank string", '" "'],
    ["exponent in a string", '"1e3"'],
    ["exponent", "1e21"],
    ["rounded by JSON.parse", "9007199254740993"],
    ["negative", "-500"],
    ["zero", "0"],
    ["fraction", "10.005"],
    ["trailing text in a string", '"500abc"'],
    ["Infinity string", '"Infinity"'],
    ["huge exponent form", "100000000000000000000000000000000000000000000000000000000000001E-60"],
    ["decimal point", "100.0"],
    ["number as string", '"100"'],
    ["above MAX_AMOUNT_MINOR", "1000001"],
  ];
  for (const [name, token] of badAmounts) {
    it(`C07: amount ${name} (${token.slice(0, 20)}) is 400 invalid_request and creates nothing`, async () => {
      const user = await createApiUser();
      const refId = freshRefId("c07");
      const result = await api("/api/v1/topups", {
        token: user.token,
        rawBody: `{"refId":"${refId}","amount":${token}}`,
      });
      expect(result.status).toBe(400);
      expect(result.json).toMatchObject({ code: "invalid_request", status: 400 });
      expect(await countRows(user.id, "topup", refId)).toBe(0);
    });
  }

  const badRefIds: [string, unknown][] = [
    ["3000 bytes", "k".repeat(3000)],
    ["NFC café", "caf\u00e9"],
    ["NFD café", "cafe\u0301"],
    ["trailing space", "k1 "],
    ["empty", ""],
    ["emoji", "\u{1F4B8}"],
    ["129 characters", "a".repeat(129)],
    ["a number", 12345],
  ];
  for (const [name, refId] of badRefIds) {
    it(`C08: refId ${name} is 400 invalid_request and creates nothing`, async () => {
      const user = await createApiUser();
      const result = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 100 } });
      expect(result.status).toBe(400);
      expect(result.json).toMatchObject({ code: "invalid_request" });
      const { testPool } = await import("../helpers/db");
      const rows = await testPool().query("SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = $1", [
        user.id,
      ]);
      expect(rows.rows[0].n).toBe(0);
    });
  }

  it('C08: "k1" and "k1 " are not the same key: the second is refused, not folded into the first', async () => {
    const user = await createApiUser();
    expect((await api("/api/v1/topups", { token: user.token, body: { refId: "k1", amount: 100 } })).status).toBe(201);
    expect((await api("/api/v1/topups", { token: user.token, body: { refId: "k1 ", amount: 100 } })).status).toBe(400);
  });

  it("malformed JSON, a non-object, unknown members and duplicate members are 400; wrong media type 415; oversize 413", async () => {
    const user = await createApiUser();
    expect((await api("/api/v1/topups", { token: user.token, rawBody: '{"refId":"a",' })).status).toBe(400);
    expect((await api("/api/v1/topups", { token: user.token, rawBody: "[1,2]" })).status).toBe(400);
    expect(
      (await api("/api/v1/topups", { token: user.token, body: { refId: "a1", amount: 1, extra: true } })).status,
    ).toBe(400);
    expect(
      (await api("/api/v1/topups", { token: user.token, rawBody: '{"refId":"a2","amount":1,"amount":2}' })).status,
    ).toBe(400);
    const media = await api("/api/v1/topups", {
      token: user.token,
      rawBody: '{"refId":"a3","amount":1}',
      headers: { "content-type": "text/plain" },
    });
    expect(media.status).toBe(415);
    expect(media.json).toMatchObject({ code: "unsupported_media_type" });
    const big = await api("/api/v1/topups", {
      token: user.token,
      rawBody: JSON.stringify({ refId: "a4", amount: 1, pad: "x".repeat(20_000) }),
    });
    expect(big.status).toBe(413);
    expect(big.json).toMatchObject({ code: "payload_too_large" });
  });
});

describe("authorization", () => {
  it("anonymous is 401, a forged token is 401, another user's top-up is 404, a user on the admin API is 403", async () => {
    const owner = await createApiUser();
    const other = await createApiUser();
    const refId = freshRefId("authz");
    expect((await api("/api/v1/topups", { token: owner.token, body: { refId, amount: 100 } })).status).toBe(201);

    const anonymous = await api("/api/v1/wallet");
    expect(anonymous.status).toBe(401);
    expect(anonymous.json).toMatchObject({ code: "unauthenticated" });
    expect((await api("/api/v1/topups", { body: { refId: "x", amount: 1 } })).status).toBe(401);
    expect((await api("/api/v1/wallet", { token: `wlt_${"A".repeat(43)}` })).status).toBe(401);
    expect((await api("/api/v1/wallet", { token: "not-a-token" })).status).toBe(401);

    const foreign = await api(`/api/v1/topups/${refId}`, { token: other.token });
    expect(foreign.status).toBe(404);
    expect(foreign.json).toMatchObject({ code: "not_found" });
    expect((await api(`/api/v1/topups/${refId}`, { token: owner.token })).status).toBe(200);

    const admin = await api("/api/v1/admin/topups", { token: owner.token });
    expect(admin.status).toBe(403);
    expect(admin.json).toMatchObject({ code: "forbidden" });
  });

  it("lists only the caller's own top-ups, newest first, with limit", async () => {
    const user = await createApiUser();
    const stranger = await createApiUser();
    for (const n of [1, 2, 3])
      await api("/api/v1/topups", { token: user.token, body: { refId: `list-${n}-${user.id.slice(-6)}`, amount: n } });
    await api("/api/v1/topups", {
      token: stranger.token,
      body: { refId: `list-x-${stranger.id.slice(-6)}`, amount: 9 },
    });
    const listed = await api("/api/v1/topups?limit=2", { token: user.token });
    expect(listed.status).toBe(200);
    expect(listed.json.topups.map((t: { amount: number }) => t.amount)).toEqual([3, 2]);
    expect((await api("/api/v1/topups?limit=101", { token: user.token })).status).toBe(400);
    expect((await api("/api/v1/topups?status=weird", { token: user.token })).status).toBe(400);
  });

  it("admins see every user's top-ups with charge and lease fields", async () => {
    const admin = await createApiUser("admin");
    const user = await createApiUser();
    const refId = freshRefId("adm");
    await api("/api/v1/topups", { token: user.token, body: { refId, amount: 5 } });
    const listed = await api("/api/v1/admin/topups", { token: admin.token });
    expect(listed.status).toBe(200);
    const row = listed.json.topups.find((t: { refId: string }) => t.refId === refId);
    expect(row).toMatchObject({ userId: user.id, amount: 5 });
    expect(row).toHaveProperty("chargeId");
    expect(row).toHaveProperty("leaseExpiresAt");
  });
});

describe("POST /api/v1/bank/webhook", () => {
  it("the same event delivered three times: one credit, three 200s; a badly signed one: 400 and nothing changes", async () => {
    const user = await createTestUser();
    const { createApiTokenOrThrow } = await import("../../lib/api-tokens/create-api-token");
    const { token } = await createApiTokenOrThrow({ userId: user.id, name: "t" });
    // sbx-nohook-: the bank sends no webhook itself, so every delivery here is ours.
    const refId = freshRefId("sbx-nohook-wh");
    const created = await api("/api/v1/topups", { token, body: { refId, amount: 1234 } });
    expect(created.status).toBe(201);
    const charges = await bankChargesFor(`topup:${user.id}:${refId}`);
    expect(charges).toHaveLength(1);
    const event = JSON.stringify({
      id: `evt_test_${refId}`,
      type: "charge.succeeded",
      data: { chargeId: charges[0].id, merchantRef: `topup:${user.id}:${refId}`, amount: 1234, currency: "USD" },
    });

    const forged = await api("/api/v1/bank/webhook", {
      rawBody: event,
      headers: { "bank-signature": signWebhookBody(event, undefined, "wrong-secret") },
    });
    expect(forged.status).toBe(400);
    expect(forged.json).toMatchObject({ code: "invalid_signature" });
    const stale = await api("/api/v1/bank/webhook", {
      rawBody: event,
      headers: { "bank-signature": signWebhookBody(event, Math.floor(Date.now() / 1000) - 301) },
    });
    expect(stale.status).toBe(400);
    const tampered = await api("/api/v1/bank/webhook", {
      rawBody: event.replace("1234", "9999"),
      headers: { "bank-signature": signWebhookBody(event) },
    });
    expect(tampered.status).toBe(400);
    expect(await balanceOf(user.id)).toBe(0);

    for (let i = 0; i < 3; i++) {
      const delivered = await api("/api/v1/bank/webhook", {
        rawBody: event,
        headers: { "bank-signature": signWebhookBody(event) },
      });
      expect(delivered.status).toBe(200);
      expect(delivered.json).toEqual({ received: true });
    }
    expect(await balanceOf(user.id)).toBe(1234);
    expect((await waitForTopupStatus(token, refId)).status).toBe("succeeded");
  });

  it("an event for an unknown merchant reference is answered 200 and credits nothing", async () => {
    const event = JSON.stringify({
      id: `evt_unknown_${freshRefId()}`,
      type: "charge.succeeded",
      data: { chargeId: "ch_nope", merchantRef: "topup:no_such_user:nothing", amount: 5, currency: "USD" },
    });
    const delivered = await api("/api/v1/bank/webhook", {
      rawBody: event,
      headers: { "bank-signature": signWebhookBody(event) },
    });
    expect(delivered.status).toBe(200);
  });
});

describe("GET /api/v1/health and /api/v1/wallet", () => {
  it("health is public and reports the database and Redis", async () => {
    const result = await api("/api/v1/health");
    expect(result.status).toBe(200);
    expect(result.json).toEqual({ db: "ok", redis: "ok" });
  });

  it("the liveness route answers without touching the database (what HAProxy checks)", async () => {
    const result = await api("/api/v1/health/live");
    expect(result.status).toBe(200);
    expect(result.json).toEqual({ live: true });
  });

  it("the wallet of a new user is 0 in the wallet currency", async () => {
    const user = await createApiUser();
    const result = await api("/api/v1/wallet", { token: user.token });
    expect(result.status).toBe(200);
    expect(result.json).toEqual({ balance: 0, currency: "USD" });
  });
});
