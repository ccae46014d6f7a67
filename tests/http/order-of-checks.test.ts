/**
 * Contract section 9, "Order of checks" for an operation: validation (400, 413, 415) comes before authentication
 * (401), which comes before authorization and same-origin (403). A request that cannot be valid is refused as
 * such whoever sends it, and nothing about the caller is looked up for it. Negative control: swap the two steps in
 * `withInputThenPrincipal` (lib/http/route.ts) and the anonymous invalid requests below answer 401.
 */
import { describe, expect, it } from "vitest";
import { api, createApiUser } from "../helpers/http";
import { freshRefId } from "../helpers/ledger";

const operations = [
  { path: "/api/v1/topups", valid: () => ({ refId: freshRefId("order"), amount: 100 }), invalid: { amount: 100 } },
  {
    path: "/api/v1/payments",
    valid: () => ({ orderId: freshRefId("order"), amount: 100 }),
    invalid: { orderId: "o", amount: -1 },
  },
  { path: "/api/v1/rewards", valid: () => ({ adId: freshRefId("order") }), invalid: { adId: "" } },
] as const;

describe.each(operations)("POST $path: the order of checks", ({ path, valid, invalid }) => {
  it("anonymous: an invalid body is 400, a wrong media type 415, an oversized body 413; a valid body is 401", async () => {
    const invalidBody = await api(path, { body: invalid });
    expect(invalidBody.status).toBe(400);
    expect(invalidBody.json).toMatchObject({ code: "invalid_request" });

    const notJson = await api(path, { rawBody: "refId=a", headers: { "content-type": "text/plain" } });
    expect(notJson.status).toBe(415);

    const oversized = await api(path, { rawBody: JSON.stringify({ pad: "x".repeat(20_000) }) });
    expect(oversized.status).toBe(413);

    const anonymous = await api(path, { body: valid() });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json).toMatchObject({ code: "unauthenticated" });
  });

  it("authenticated: an invalid body is still 400; an unknown session from another origin is 401, not 403", async () => {
    const user = await createApiUser();
    const invalidWithToken = await api(path, { token: user.token, body: invalid });
    expect(invalidWithToken.status).toBe(400);
    const forgedCookie = await api(path, {
      body: valid(),
      headers: { cookie: "better-auth.session_token=forged", origin: "https://evil.example" },
    });
    expect(forgedCookie.status).toBe(401);
  });
});
