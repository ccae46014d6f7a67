/**
 * The OpenAPI document: a well-kept OpenAPI validator accepts it, it describes exactly the
 * route files of app/api/v1 and their methods, every schema in it compiles as JSON Schema 2020-12, and the response
 * checker the http suite runs on every response refuses what the document does not promise (the negative control
 * at unit level; the end-to-end one is `npm run control:openapi`).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../lib/openapi/document";
import { UNDOCUMENTED_ROUTE_TEMPLATES } from "../../lib/http/route-templates";
import { PROBLEM_CODES } from "../../lib/problems";
import { OpenApiContract } from "../helpers/openapi-contract";

const document = JSON.parse(JSON.stringify(openApiDocument()));

/** `app/api/v1/**​/route.ts` as `{ template, methods }`, `[refId]` written `{refId}`. */
function routeFiles(): Array<{ template: string; methods: string[] }> {
  const root = join(process.cwd(), "app", "api", "v1");
  const found: Array<{ template: string; methods: string[] }> = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name === "route.ts") {
        const segments = relative(root, dir).split("/").filter(Boolean);
        const template = `/api/v1/${segments.map((s) => s.replace(/^\[(.+)\]$/, "{$1}")).join("/")}`;
        const source = readFileSync(path, "utf8");
        // Route files export every method through apiRoute (lib/http/api-route.ts); the ones they implement are
        // the keys of its argument, the rest answer 405.
        const implemented = /apiRoute(?:<[^>]*>)?\(\{([^}]*)\}\)/.exec(source)?.[1] ?? "";
        const methods = [...implemented.matchAll(/\b(GET|POST|PUT|PATCH|DELETE)\s*:/g)].map((m) => m[1]!.toLowerCase());
        found.push({ template, methods });
      }
    }
  };
  walk(root);
  return found.sort((a, b) => a.template.localeCompare(b.template));
}

describe("the OpenAPI document", () => {
  it("is valid OpenAPI 3.1 for @seriousme/openapi-schema-validator", async () => {
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
  });

  it("describes exactly the route files of app/api/v1 and their methods, but the bench's floor", () => {
    const documented = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .map(([template, item]) => ({ template, methods: Object.keys(item).sort() }))
      .sort((a, b) => a.template.localeCompare(b.template));
    const undocumented: readonly string[] = UNDOCUMENTED_ROUTE_TEMPLATES;
    const files = routeFiles()
      .filter((route) => !undocumented.includes(route.template))
      .map((route) => ({ ...route, methods: route.methods.sort() }));
    expect(files.length).toBeGreaterThan(10);
    expect(documented).toEqual(files);
  });

  it("declares both authentications, the webhook signature, cursor parameters and the replay/retry headers", () => {
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual([
      "bearerToken",
      "metricsToken",
      "sessionCookie",
    ]);
    const topups = document.paths["/api/v1/topups"];
    expect(topups.post.security).toEqual([{ bearerToken: [] }, { sessionCookie: [] }]);
    expect(topups.get.parameters.map((p: { name: string }) => p.name).sort()).toEqual(["cursor", "limit", "status"]);
    const webhook = document.paths["/api/v1/bank/webhook"].post;
    expect(webhook.security).toEqual([]);
    expect(webhook.parameters).toContainEqual(expect.objectContaining({ name: "Bank-Signature", in: "header" }));
    const text = JSON.stringify(document);
    for (const header of ["Idempotent-Replayed", "Retry-After", "X-Request-Id", "WWW-Authenticate"])
      expect(text).toContain(header);
    // Every problem code the app can answer is described by at least one route.
    // Not per route: method_not_allowed answers the methods a path does not offer (not operations of the document),
    // token_limit_reached the tokens page (tokens are not made through the API).
    const notPerRoute = new Set(["service_unavailable", "method_not_allowed", "token_limit_reached"]);
    for (const code of Object.keys(PROBLEM_CODES).filter((c) => !notPerRoute.has(c)))
      expect(text, code).toContain(`Problem-${code}`);
  });

  it("every response schema compiles, and the checker accepts what the document promises", () => {
    const contract = new OpenApiContract(document);
    const ok = contract.check({
      method: "GET",
      path: "/api/v1/wallet",
      status: 200,
      headers: new Headers({ "content-type": "application/json", "x-request-id": "r-1" }),
      text: '{"balance":0,"currency":"USD"}',
    });
    expect(ok).toEqual([]);
    for (const [template, item] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const status of Object.keys(operation.responses)) {
          // A body that fits no schema: the check must run (compile) and report, never throw.
          const problems = contract.check({
            method,
            path: template.replace(/\{[^}]+\}/g, "x"),
            status: Number(status),
            headers: new Headers({ "content-type": "application/json", "x-request-id": "r-1" }),
            text: '{"surely":"not this"}',
          });
          expect(problems.length, `${method} ${template} ${status}`).toBeGreaterThan(0);
        }
      }
    }
  });

  it("negative control: an undeclared field, status, media type or a missing request id is refused", () => {
    const contract = new OpenApiContract(document);
    const wallet = (status: number, headers: Record<string, string>, text: string) =>
      contract.check({ method: "GET", path: "/api/v1/wallet", status, headers: new Headers(headers), text });
    const json = { "content-type": "application/json", "x-request-id": "r-1" };
    expect(wallet(200, json, '{"balance":0,"currency":"USD","extra":true}')).toEqual([
      expect.stringContaining("must NOT have additional properties"),
    ]);
    expect(wallet(200, json, '{"balance":"0","currency":"USD"}').join()).toContain("must be integer");
    expect(wallet(418, json, "{}").join()).toContain("status 418 is not declared");
    expect(wallet(200, { ...json, "content-type": "text/html" }, "<p>").join()).toContain("content type");
    expect(wallet(200, { "content-type": "application/json" }, '{"balance":0,"currency":"USD"}').join()).toContain(
      "required header X-Request-Id is missing",
    );
    const problem = (text: string) =>
      contract.check({
        method: "GET",
        path: "/api/v1/wallet",
        status: 401,
        headers: new Headers({
          "content-type": "application/problem+json",
          "x-request-id": "r-1",
          "www-authenticate": 'Bearer realm="wallet"',
        }),
        text,
      });
    const unauthenticated = {
      type: "/problems/unauthenticated",
      title: "Authentication required",
      status: 401,
      detail: "Sign in.",
      code: "unauthenticated",
      requestId: "r-1",
    };
    expect(problem(JSON.stringify(unauthenticated))).toEqual([]);
    expect(problem(JSON.stringify({ ...unauthenticated, code: "forbidden" })).length).toBeGreaterThan(0);
    const { requestId: _dropped, ...withoutId } = unauthenticated;
    expect(problem(JSON.stringify(withoutId)).length).toBeGreaterThan(0);
    expect(
      contract.check({
        method: "DELETE",
        path: "/api/v1/wallet",
        status: 200,
        headers: new Headers(json),
        text: "{}",
      }),
    ).toEqual([expect.stringContaining("not in the document")]);
  });
});
