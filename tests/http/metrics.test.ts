/**
 * Metrics: `GET /api/v1/metrics` on an app instance of its own (its counters start at zero), after
 * a known mix of operations, shows exactly that mix: HTTP requests and latency by route and status, claim outcomes
 * by type, webhook outcomes, a reconciler pass, reward reservations; the pool and flagged-row gauges are there.
 * Reading it takes METRICS_TOKEN or an admin: 401 without credentials, 403 for a user.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/lib/ports";
import type { Service } from "../../scripts/lib/processes";
import { startExtraApp } from "../helpers/extra-app";
import { createApiUser, signWebhookBody, waitForBankCharge, type ApiUser } from "../helpers/http";
import { freshRefId, seedBalance } from "../helpers/ledger";
import { testStack } from "../helpers/stack";

const METRICS_TOKEN = `metrics-test-${"x".repeat(40)}`;

let app: Service | null = null;
let base = "";

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  app = await startExtraApp({
    name: "metrics-app",
    port,
    bankUrl: testStack().bankUrl!,
    env: { METRICS_TOKEN },
  });
}, 120_000);

afterAll(async () => {
  await app?.stop();
});

async function call(
  path: string,
  options: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const body = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`${base}${path}`, { method: body === undefined ? "GET" : "POST", headers, body });
  return { status: response.status, text: await response.text(), headers: response.headers };
}

/** `name{labels} value` lines of the Prometheus text format, as a map from `name{labels}` (labels sorted) to value. */
function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels = (match[2] ?? "")
      .split(/,(?=[a-zA-Z_]+=")/)
      .filter(Boolean)
      .sort()
      .join(",");
    samples.set(`${match[1]}{${labels}}`, Number(match[3]));
  }
  return samples;
}

/** The key of a sample with these labels (sorted like {@link parseMetrics}). */
function sample(name: string, labels: Record<string, string> = {}): string {
  const text = Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .sort()
    .join(",");
  return `${name}{${text}}`;
}

describe("GET /api/v1/metrics", () => {
  let user: ApiUser;
  let admin: ApiUser;

  it("is for METRICS_TOKEN and admins only", async () => {
    user = await createApiUser();
    admin = await createApiUser("admin");
    expect((await call("/api/v1/metrics")).status).toBe(401);
    expect((await call("/api/v1/metrics", { token: user.token })).status).toBe(403);
    expect((await call("/api/v1/metrics", { token: `${METRICS_TOKEN}x` })).status).toBe(401);
    const byAdmin = await call("/api/v1/metrics", { token: admin.token });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it("shows the exact counts of a known mix of operations", async () => {
    // Top-ups: three new ones (no webhook from the bank: sbx-nohook-), two replays, one mismatch.
    const refIds = [freshRefId("sbx-nohook-m"), freshRefId("sbx-nohook-m"), freshRefId("sbx-nohook-m")];
    for (const refId of refIds)
      expect((await call("/api/v1/topups", { token: user.token, body: { refId, amount: 100 } })).status).toBe(201);
    for (let i = 0; i < 2; i++)
      expect(
        (await call("/api/v1/topups", { token: user.token, body: { refId: refIds[0], amount: 100 } })).status,
      ).toBe(201);
    expect((await call("/api/v1/topups", { token: user.token, body: { refId: refIds[0], amount: 101 } })).status).toBe(
      422,
    );
    // Payments: one paid, one refused for funds (stored 402) and its replay.
    await seedBalance(user.id, 50);
    expect(
      (await call("/api/v1/payments", { token: user.token, body: { orderId: freshRefId("m"), amount: 30 } })).status,
    ).toBe(201);
    const poor = freshRefId("m-poor");
    for (let i = 0; i < 2; i++)
      expect((await call("/api/v1/payments", { token: user.token, body: { orderId: poor, amount: 500 } })).status).toBe(
        402,
      );
    // A reward and its replay (a replay never touches the cap: one reservation).
    const adId = freshRefId("ad");
    for (let i = 0; i < 2; i++)
      expect((await call("/api/v1/rewards", { token: user.token, body: { adId } })).status).toBe(201);
    // Webhooks: the first top-up's charge succeeded at the bank; delivered twice, then once badly signed.
    const merchantRef = `topup:${user.id}:${refIds[0]}`;
    const charge = await waitForBankCharge(merchantRef);
    const event = JSON.stringify({
      id: `evt_metrics_${refIds[0]}`,
      type: "charge.succeeded",
      data: { chargeId: charge.id, merchantRef, amount: 100, currency: "USD" },
    });
    for (let i = 0; i < 2; i++)
      expect(
        (await call("/api/v1/bank/webhook", { rawBody: event, headers: { "bank-signature": signWebhookBody(event) } }))
          .status,
      ).toBe(200);
    const forged = signWebhookBody(event, undefined, "whsec_not_the_secret_of_this_stack");
    expect((await call("/api/v1/bank/webhook", { rawBody: event, headers: { "bank-signature": forged } })).status).toBe(
      400,
    );
    // One reconciler pass over a user with nothing to do, and one unauthenticated request.
    const idle = await createApiUser();
    const pass = await call(`/api/v1/admin/reconcile?userId=${idle.id}`, { token: admin.token, rawBody: "" });
    expect(pass.status).toBe(200);
    expect((await call("/api/v1/wallet")).status).toBe(401);

    const scraped = await call("/api/v1/metrics", { token: METRICS_TOKEN });
    expect(scraped.status).toBe(200);
    const samples = parseMetrics(scraped.text);
    const expected: Array<[string, Record<string, string>, number]> = [
      ["wallet_claim_outcomes_total", { type: "topup", outcome: "claimed" }, 3],
      ["wallet_claim_outcomes_total", { type: "topup", outcome: "replay" }, 2],
      ["wallet_claim_outcomes_total", { type: "topup", outcome: "mismatch" }, 1],
      ["wallet_claim_outcomes_total", { type: "payment", outcome: "claimed" }, 2],
      ["wallet_claim_outcomes_total", { type: "payment", outcome: "replay" }, 1],
      ["wallet_claim_outcomes_total", { type: "reward", outcome: "claimed" }, 1],
      ["wallet_claim_outcomes_total", { type: "reward", outcome: "replay" }, 1],
      ["wallet_reward_reservations_total", { outcome: "reserved" }, 1],
      ["wallet_webhook_deliveries_total", { outcome: "credited" }, 1],
      ["wallet_webhook_deliveries_total", { outcome: "duplicate" }, 1],
      ["wallet_webhook_deliveries_total", { outcome: "invalid_signature" }, 1],
      ["wallet_reconciler_passes_total", {}, 1],
      ["wallet_reconciler_rows_total", { result: "examined" }, 0],
      ["wallet_reconciler_rows_total", { result: "completed" }, 0],
      ["wallet_http_requests_total", { route: "/api/v1/topups", method: "POST", status: "201" }, 5],
      ["wallet_http_requests_total", { route: "/api/v1/topups", method: "POST", status: "422" }, 1],
      ["wallet_http_requests_total", { route: "/api/v1/payments", method: "POST", status: "201" }, 1],
      ["wallet_http_requests_total", { route: "/api/v1/payments", method: "POST", status: "402" }, 2],
      ["wallet_http_requests_total", { route: "/api/v1/rewards", method: "POST", status: "201" }, 2],
      ["wallet_http_requests_total", { route: "/api/v1/bank/webhook", method: "POST", status: "200" }, 2],
      ["wallet_http_requests_total", { route: "/api/v1/bank/webhook", method: "POST", status: "400" }, 1],
      ["wallet_http_requests_total", { route: "/api/v1/admin/reconcile", method: "POST", status: "200" }, 1],
      ["wallet_http_requests_total", { route: "/api/v1/wallet", method: "GET", status: "401" }, 1],
      // The first test's four reads of this route; this scrape is counted after it is answered.
      ["wallet_http_requests_total", { route: "/api/v1/metrics", method: "GET", status: "401" }, 2],
      ["wallet_http_requests_total", { route: "/api/v1/metrics", method: "GET", status: "403" }, 1],
      ["wallet_http_requests_total", { route: "/api/v1/metrics", method: "GET", status: "200" }, 1],
      ["wallet_http_request_duration_seconds_count", { route: "/api/v1/topups", method: "POST", status: "201" }, 5],
    ];
    const actual = expected.map(([name, labels]) => samples.get(sample(name, labels)));
    expect(actual).toEqual(expected.map(([, , value]) => value));
    // Nothing else was counted as an operation or a delivery.
    const total = (name: string) =>
      [...samples].filter(([key]) => key.startsWith(`${name}{`)).reduce((sum, [, value]) => sum + value, 0);
    expect(total("wallet_claim_outcomes_total")).toBe(11);
    expect(total("wallet_webhook_deliveries_total")).toBe(3);
    expect(total("wallet_reward_releases_total")).toBe(0);
    // Scrape-time gauges and the process metrics.
    for (const state of ["in_use", "idle", "waiting"])
      expect(samples.get(sample("wallet_db_pool_connections", { state }))).toBeGreaterThanOrEqual(0);
    expect(samples.get(sample("wallet_flagged_rows", { reason: "stuck" }))).toBeGreaterThanOrEqual(0);
    expect(samples.has(sample("process_cpu_user_seconds_total"))).toBe(true);
  }, 90_000);
});
