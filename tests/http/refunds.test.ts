/**
 * `POST /api/v1/admin/topups/{userId}/{refId}/refunds` over real HTTP against the built app and the sandbox bank
 * (contract section 11): the order of checks (400/415 before 401, 403 for a non-admin), 404 and 409 before any claim,
 * then the refund itself with byte-identical replays and a stored 422 past the top-up. Every answer is checked
 * against the OpenAPI document by the api helper's caller (tests/helpers/openapi-contract.ts) where it applies.
 */
import { describe, expect, it } from "vitest";
import { api, createApiUser, waitForTopupStatus } from "../helpers/http";
import { freshRefId } from "../helpers/ledger";

const refundsPath = (userId: string, refId: string) =>
  `/api/v1/admin/topups/${encodeURIComponent(userId)}/${encodeURIComponent(refId)}/refunds`;

async function succeededTopupOf(token: string, amount: number): Promise<string> {
  const refId = freshRefId("http-refund");
  const created = await api("/api/v1/topups", { token, body: { refId, amount } });
  expect(created.status).toBe(201);
  expect((await waitForTopupStatus(token, refId)).status).toBe("succeeded");
  return refId;
}

describe("POST /api/v1/admin/topups/{userId}/{refId}/refunds", () => {
  it("checks the body before the caller (400, 415 anonymous), then the caller (401, 403 for a non-admin)", async () => {
    const path = refundsPath("u1", "t1");
    expect((await api(path, { body: { refundId: "r", amount: 0 } })).status).toBe(400);
    expect((await api(path, { rawBody: "x", headers: { "content-type": "text/plain" } })).status).toBe(415);
    expect((await api(path, { body: { refundId: "r", amount: 1 } })).status).toBe(401);
    const user = await createApiUser();
    const refused = await api(path, { token: user.token, body: { refundId: "r", amount: 1 } });
    expect(refused.status).toBe(403);
  });

  it("refunds once per refundId (byte-identical replay), refuses past the top-up (422 stored), 404 unknown top-up", async () => {
    const owner = await createApiUser();
    const admin = await createApiUser("admin");
    const refId = await succeededTopupOf(owner.token, 1000);
    const refundId = freshRefId("r");
    const first = await api(refundsPath(owner.id, refId), { token: admin.token, body: { refundId, amount: 600 } });
    expect(first.status).toBe(201);
    expect(first.json.refund).toMatchObject({ refundId, topupRefId: refId, amount: 600 });
    const again = await api(refundsPath(owner.id, refId), { token: admin.token, body: { refundId, amount: 600 } });
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const other = await api(refundsPath(owner.id, refId), { token: admin.token, body: { refundId, amount: 601 } });
    expect(other.status).toBe(422);
    expect(other.json).toMatchObject({ code: "idempotency_key_reused", fields: ["amount"] });
    const overId = freshRefId("r");
    const over = await api(refundsPath(owner.id, refId), {
      token: admin.token,
      body: { refundId: overId, amount: 500 },
    });
    expect(over.status).toBe(422);
    expect(over.json).toMatchObject({ code: "refund_exceeds_topup" });
    const wallet = await api("/api/v1/wallet", { token: owner.token });
    expect(wallet.json.balance).toBe(400);
    // The refused refund moved nothing and was the admin's: not in the customer's statement (decision 055); the
    // reserved one is, with its readable reference.
    const statement = await api("/api/v1/entries?type=refund", { token: owner.token });
    expect(statement.status).toBe(200);
    expect(statement.json.entries.map((line: { refId: string }) => line.refId)).toEqual([refundId]);
    expect(statement.json.entries[0].reference).toMatch(/^RF-[0-9A-Z]{4}-[0-9A-Z]{4}$/);
    const searched = await api(`/api/v1/entries?q=${encodeURIComponent(overId)}`, { token: owner.token });
    expect(searched.json.entries).toEqual([]);
    const missing = await api(refundsPath(owner.id, "nope"), {
      token: admin.token,
      body: { refundId: "r", amount: 1 },
    });
    expect(missing.status).toBe(404);
  });
});
