/**
 * Request ids (contract section 4): a client's `X-Request-Id` of 1..128 characters of
 * `[A-Za-z0-9._:-]` is accepted, anything else is replaced by a minted one; the id is echoed on every response,
 * written on every log line of the request, and put in every problem body that is not a stored outcome, while a
 * stored body (402) stays byte-identical on replay.
 */
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/lib/ports";
import type { Service } from "../../scripts/lib/processes";
import { startExtraApp } from "../helpers/extra-app";
import { api, createApiUser } from "../helpers/http";
import { freshRefId, seedBalance } from "../helpers/ledger";

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let ownApp: Service | null = null;
afterAll(async () => {
  await ownApp?.stop();
});

describe("X-Request-Id", () => {
  it("a valid client id is echoed exactly; an invalid one is replaced by a minted UUID", async () => {
    const valid = ["a", "Az09._:-", "x".repeat(128)];
    for (const id of valid) {
      const result = await api("/api/v1/health", { headers: { "x-request-id": id } });
      expect(result.headers.get("x-request-id")).toBe(id);
    }
    const invalid = ["x".repeat(129), "has space", "semi;colon", "slash/id", "é"];
    for (const id of invalid) {
      const result = await api("/api/v1/health", { headers: { "x-request-id": id } });
      const echoed = result.headers.get("x-request-id");
      expect(echoed).not.toBe(id);
      expect(echoed).toMatch(UUID_PATTERN);
    }
    const minted = await Promise.all([api("/api/v1/health"), api("/api/v1/health")]);
    const ids = minted.map((r) => r.headers.get("x-request-id"));
    for (const id of ids) expect(id).toMatch(UUID_PATTERN);
    expect(ids[0]).not.toBe(ids[1]);
  });

  it("problem bodies answered now carry the request id: 401, 400, 404, 422 mismatch", async () => {
    const user = await createApiUser();
    const unauthenticated = await api("/api/v1/wallet", { headers: { "x-request-id": "req-401" } });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.json).toMatchObject({ code: "unauthenticated", requestId: "req-401" });

    const invalid = await api("/api/v1/topups?limit=0", { token: user.token, headers: { "x-request-id": "req-400" } });
    expect(invalid.status).toBe(400);
    expect(invalid.json).toMatchObject({ code: "invalid_request", requestId: "req-400" });

    const missing = await api(`/api/v1/topups/${freshRefId("none")}`, { token: user.token });
    expect(missing.status).toBe(404);
    expect(missing.json.requestId).toBe(missing.headers.get("x-request-id"));

    const refId = freshRefId("rid");
    expect((await api("/api/v1/topups", { token: user.token, body: { refId, amount: 10 } })).status).toBe(201);
    const mismatch = await api("/api/v1/topups", {
      token: user.token,
      body: { refId, amount: 11 },
      headers: { "x-request-id": "req-422" },
    });
    expect(mismatch.status).toBe(422);
    expect(mismatch.json).toMatchObject({ code: "idempotency_key_reused", fields: ["amount"], requestId: "req-422" });
  });

  it("a stored outcome keeps its first bytes: the 201 and the 402 replay byte-identically under new request ids", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 10);
    const orderId = freshRefId("rid-402");
    const first = await api("/api/v1/payments", {
      token: user.token,
      body: { orderId, amount: 50 },
      headers: { "x-request-id": "first-402" },
    });
    expect(first.status).toBe(402);
    expect(first.headers.get("x-request-id")).toBe("first-402");
    expect(first.json).not.toHaveProperty("requestId");
    const replay = await api("/api/v1/payments", {
      token: user.token,
      body: { orderId, amount: 50 },
      headers: { "x-request-id": "second-402" },
    });
    expect(replay.headers.get("x-request-id")).toBe("second-402");
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.text).toBe(first.text);

    const paid = freshRefId("rid-201");
    const created = await api("/api/v1/payments", { token: user.token, body: { orderId: paid, amount: 5 } });
    const again = await api("/api/v1/payments", { token: user.token, body: { orderId: paid, amount: 5 } });
    expect(created.status).toBe(201);
    expect(again.text).toBe(created.text);
    expect(again.headers.get("x-request-id")).not.toBe(created.headers.get("x-request-id"));
  });

  it("every log line a request writes carries its id (an app of its own at LOG_LEVEL=debug, its bank down)", async () => {
    const [port, closedPort] = await Promise.all([freePort(), freePort()]);
    // Nothing listens on closedPort: the top-up's bank call fails, which the app logs at warn level.
    ownApp = await startExtraApp({
      name: "request-id-app",
      port,
      bankUrl: `http://127.0.0.1:${closedPort}`,
      env: { LOG_LEVEL: "debug", RECONCILE_INTERVAL_MS: "0" },
    });
    const user = await createApiUser();
    const requestId = `log-${freshRefId()}`;
    const response = await fetch(`http://127.0.0.1:${port}/api/v1/topups`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${user.token}`,
        "content-type": "application/json",
        "x-request-id": requestId,
      },
      body: JSON.stringify({ refId: freshRefId("rid-log"), amount: 25 }),
    });
    expect(response.status).toBe(201);
    expect(response.headers.get("x-request-id")).toBe(requestId);
    await response.text();

    // The service keeps its last output lines, each prefixed with `[name] `; pino writes one JSON object a line.
    const lines = ownApp
      .recentOutput()
      .split("\n")
      .map((line) => line.replace(/^\[[^\]]+\] /, ""))
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { msg: string; requestId?: string; refId?: string });
    const ours = lines.filter((line) => line.requestId === requestId);
    const messages = ours.map((line) => line.msg);
    expect(messages).toContain("top-up charge outcome unknown");
    expect(messages).toContain("request answered");
    // No line about this request's top-up was written without the id.
    const aboutTopup = lines.filter((line) => line.msg === "top-up charge outcome unknown");
    for (const line of aboutTopup) expect(line.requestId).toBeDefined();
  }, 120_000);
});
