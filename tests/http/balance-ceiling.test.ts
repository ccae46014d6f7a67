/**
 * C15 over HTTP: a wallet at MAX_BALANCE_MINOR (the app's default, 10,000,000). A top-up of 1 is
 * `422 balance_limit_exceeded`, stored and replayed byte for byte, and the bank has no charge for its merchant
 * reference; a reward at the ceiling is refused the same way, never a 500. Real app, real sandbox bank.
 */
import { describe, expect, it } from "vitest";
import { getCharge } from "../../lib/bank/client";
import { api, createApiUser } from "../helpers/http";
import { balanceOf, freshRefId, seedBalance } from "../helpers/ledger";
import { bankUrl } from "../helpers/stack";

/** The app's ceiling: the contract's default (the test stack does not set MAX_BALANCE_MINOR). */
const MAX_BALANCE_MINOR = 10_000_000;

describe("C15: no charge without room for its credit", () => {
  it("C15: at the ceiling a top-up of 1 is 422 balance_limit_exceeded, replayed, and the bank has no charge for it", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, MAX_BALANCE_MINOR);
    const refId = freshRefId("c15");
    const first = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 1 } });
    expect(first.status).toBe(422);
    expect(first.headers.get("content-type")).toBe("application/problem+json");
    expect(first.json).toMatchObject({ code: "balance_limit_exceeded", status: 422 });
    // A stored outcome carries no request id, so that its replays stay byte-identical (contract section 4).
    expect(first.json.requestId).toBeUndefined();
    expect(first.headers.get("idempotent-replayed")).toBeNull();

    const retry = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 1 } });
    expect(retry.status).toBe(422);
    expect(retry.text).toBe(first.text);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");

    const looked = await getCharge(`topup:${user.id}:${refId}`, { bankUrl: bankUrl(), timeoutMs: 5000 });
    expect(looked).toEqual({ kind: "not_found" });
    const row = await api(`/api/v1/topups/${refId}`, { token: user.token });
    expect(row.json.topup).toMatchObject({ status: "failed", failureReason: "balance_limit_exceeded", amount: 1 });
    expect(await balanceOf(user.id)).toBe(MAX_BALANCE_MINOR);

    // Another amount under the same reference is a different operation: refused as such, not as the ceiling.
    const other = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 2 } });
    expect(other.json).toMatchObject({ code: "idempotency_key_reused", fields: ["amount"] });
  });

  it("C15: a reward at the ceiling is refused the same way (stored 422, replayed), never a 500", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, MAX_BALANCE_MINOR);
    const first = await api("/api/v1/rewards", { token: user.token, body: { adId: "ad-c15-http" } });
    expect(first.status).toBe(422);
    expect(first.json).toMatchObject({ code: "balance_limit_exceeded" });
    const again = await api("/api/v1/rewards", { token: user.token, body: { adId: "ad-c15-http" } });
    expect(again.status).toBe(422);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await balanceOf(user.id)).toBe(MAX_BALANCE_MINOR);
  });

  it("C15: just under the ceiling a top-up that fits is charged and credited up to it", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, MAX_BALANCE_MINOR - 300);
    const refId = freshRefId("c15-fits");
    const created = await api("/api/v1/topups", { token: user.token, body: { refId, amount: 300 } });
    expect(created.status).toBe(201);
    const looked = await getCharge(`topup:${user.id}:${refId}`, { bankUrl: bankUrl(), timeoutMs: 5000 });
    expect(looked).toMatchObject({ kind: "found", charge: { amount: 300 } });
  });
});
