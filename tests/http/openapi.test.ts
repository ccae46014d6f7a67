/**
 * The served OpenAPI document and the response check of every http test: the app serves
 * the document built from the zod schemas, a well-kept validator accepts what it serves, and the fetch wrapper of
 * tests/setup/openapi-fetch.ts really checks the responses (the end-to-end negative control, a route that drifts
 * and makes this suite fail, is `npm run control:openapi`).
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../lib/openapi/document";
import { api } from "../helpers/http";
import { checkedResponses } from "../setup/openapi-fetch";

describe("GET /api/v1/openapi.json", () => {
  it("serves the document built from the zod schemas, valid OpenAPI 3.1, to anyone", async () => {
    const served = await api("/api/v1/openapi.json");
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("application/json");
    expect(served.json).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    const validator = new Validator();
    const result = await validator.validate(served.json);
    expect(result.errors ?? []).toEqual([]);
    expect(validator.version).toBe("3.1");
  });

  it("every /api/v1 response a test receives goes through the document's check", async () => {
    const before = checkedResponses.count;
    await api("/api/v1/health");
    await fetch(`${new URL(process.env.APP_URL!).origin}/api/v1/wallet`);
    expect(checkedResponses.count).toBe(before + 2);
  });
});

describe("POST /api/v1/bench/noop, the bench's floor", () => {
  it("is a 404 like any unknown path in an app the bench did not start, and the document does not list it", async () => {
    // The test stack starts the app without BENCH_FLOOR_ROUTE; bench/run.ts sets it for its own app.
    const answered = await api("/api/v1/bench/noop", { method: "POST", body: {} });
    expect(answered.status).toBe(404);
    expect(answered.json).toMatchObject({ code: "not_found" });
    const served = await api("/api/v1/openapi.json");
    expect(Object.keys((served.json as { paths: object }).paths)).not.toContain("/api/v1/bench/noop");
  });
});
