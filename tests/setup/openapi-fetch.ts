/**
 * Setup file of the vitest `http` project: every response that a test receives through `fetch`
 * from an `/api/v1` path (the `api()` helper and direct `fetch` calls alike, against the stack's app or an app of a
 * test's own) is checked against the OpenAPI document the stack's app serves. A response that departs from it
 * (an undeclared status, field, header value or media type) fails the test that received it, in `afterEach`,
 * even when the test itself caught or ignored the response.
 *
 * Negative control: `npm run control:openapi` adds an undeclared field to one route's answer, rebuilds and runs
 * the http suite, which must fail (scripts/controls/openapi-drift.ts).
 */
import { afterEach, beforeAll } from "vitest";
import { OpenApiContract } from "../helpers/openapi-contract";
import { appUrl } from "../helpers/stack";

// The unwrapped fetch, kept on globalThis so that a second load of this file in the same worker does not wrap twice.
const realFetchKey = Symbol.for("wallet.tests.realFetch");
const holder = globalThis as typeof globalThis & { [realFetchKey]?: typeof fetch };
holder[realFetchKey] ??= globalThis.fetch;
const realFetch = holder[realFetchKey];
let contract: OpenApiContract | null = null;
const violations: string[] = [];
/** Responses checked in this test file: tests/http/openapi.test.ts asserts that the check runs at all. */
export const checkedResponses = { count: 0 };

beforeAll(async () => {
  if (contract) return;
  const response = await realFetch(`${appUrl()}/api/v1/openapi.json`);
  if (response.status !== 200) throw new Error(`GET /api/v1/openapi.json answered ${response.status}`);
  contract = new OpenApiContract(await response.json());
});

globalThis.fetch = async (input, init) => {
  const response = await realFetch(input, init);
  const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
  const method = init?.method ?? (input instanceof Request ? input.method : "GET");
  if (!url.pathname.startsWith("/api/v1/") || !contract) return response;
  let text: string;
  try {
    // An event stream ends only when the server or the client closes it: its status, headers and media type are
    // checked without waiting for the body (the checker reads only JSON bodies).
    const streaming = (response.headers.get("content-type") ?? "").startsWith("text/event-stream");
    text = streaming ? "" : await response.clone().text();
  } catch {
    // The connection died mid-body (a test killed the app): there is no response to check.
    return response;
  }
  checkedResponses.count += 1;
  violations.push(
    ...contract.check({
      method,
      path: url.pathname,
      status: response.status,
      headers: response.headers,
      text,
    }),
  );
  return response;
};

afterEach(() => {
  if (violations.length === 0) return;
  const found = violations.splice(0);
  throw new Error(`responses that depart from /api/v1/openapi.json:\n  ${found.join("\n  ")}`);
});
