/**
 * The limits and edge defences against the built app over real HTTP (contract section 9): each attack as a
 * test, from two loopback addresses (127.0.0.1 and 127.0.0.2).
 *
 * The test stack's app runs with TRUSTED_PROXY_HOPS=0 (the default) and a raised SIGNUPS_PER_HOUR. A second app
 * process ("proxied app") runs with TRUSTED_PROXY_HOPS=1 and the default SIGNUPS_PER_HOUR (5): it is the C22
 * negative control (the same throttle, told to trust the header, lets a client dodge it) and, used as if behind
 * one proxy, the test of the default sign-up limit.
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/lib/ports";
import type { Service } from "../../scripts/lib/processes";
import { projectRoot } from "../../scripts/lib/stack";
import { createUser } from "../../lib/users/create-user";
import { startExtraApp } from "../helpers/extra-app";
import { postJsonFrom, requestFrom, submitPageFormFrom } from "../helpers/from-address";
import { api, createApiUser } from "../helpers/http";
import { freshRefId, seedBalance } from "../helpers/ledger";
import { testPool } from "../helpers/db";
import { appUrl, testStack } from "../helpers/stack";

const PASSWORD = "correct horse battery staple";
const FIRST = "127.0.0.1";
const SECOND = "127.0.0.2";

let proxied: Service | null = null;
let proxiedUrl = "";

beforeAll(async () => {
  const port = await freePort();
  proxied = await startExtraApp({
    name: "proxied-app",
    port,
    bankUrl: testStack().bankUrl!,
    env: { TRUSTED_PROXY_HOPS: "1" },
  });
  proxiedUrl = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await proxied?.stop();
});

async function newAccount(label: string): Promise<string> {
  const email = `${label}-${randomUUID()}@example.test`;
  await createUser({ email, password: PASSWORD, role: "user" });
  return email;
}

/**
 * C22's attack: `attempts` wrong passwords for `email` through `/api/auth/sign-in/email` from 127.0.0.1, each
 * with a new `X-Forwarded-For`. Returns the statuses.
 */
async function rotatingForwardedForAttack(base: string, email: string, attempts: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < attempts; i++) {
    const response = await postJsonFrom(
      FIRST,
      `${base}/api/auth/sign-in/email`,
      { email, password: `wrong password ${i}` },
      { "x-forwarded-for": `203.0.113.${i + 1}` },
    );
    statuses.push(response.status);
  }
  return statuses;
}

describe("C22: a client cannot pick its own address", () => {
  it("30 failed sign-ins with a new X-Forwarded-For each are throttled after 5; the owner then signs in from 127.0.0.2", async () => {
    const email = await newAccount("c22");
    const statuses = await rotatingForwardedForAttack(appUrl(), email, 30);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.slice(5)).toEqual(Array(25).fill(429));
    const throttled = await postJsonFrom(FIRST, `${appUrl()}/api/auth/sign-in/email`, { email, password: PASSWORD });
    expect(throttled.status).toBe(429);
    expect(throttled.headers["content-type"]).toBe("application/problem+json");
    expect(throttled.json.code).toBe("rate_limited");
    expect(Number(throttled.headers["retry-after"])).toBeGreaterThan(800);
    const owner = await postJsonFrom(SECOND, `${appUrl()}/api/auth/sign-in/email`, { email, password: PASSWORD });
    expect(owner.status).toBe(200);
    expect(owner.headers["set-cookie"]?.[0]).toContain("session_token=");
  });

  it("negative control: the same attack on an app told to trust one X-Forwarded-For hop is never throttled", async () => {
    const email = await newAccount("c22-control");
    const statuses = await rotatingForwardedForAttack(proxiedUrl, email, 30);
    // Every guess reached the password check: the test above fails on a resolver that trusts the header.
    expect(statuses).toEqual(Array(30).fill(401));
  });

  it("the sign-in page (server action) is throttled the same way, and the owner's page sign-in from elsewhere works", async () => {
    const email = await newAccount("c22-page");
    const answers: string[] = [];
    for (let i = 0; i < 7; i++) {
      const response = await submitPageFormFrom(
        FIRST,
        `${appUrl()}/sign-in`,
        { email, password: `wrong password ${i}` },
        { "x-forwarded-for": `198.51.100.${i + 1}` },
      );
      // The form answers on the page (the email typed stays in its field): 200 with the sentence.
      expect(response.status).toBe(200);
      answers.push(
        response.text.includes("Too many failed sign-ins")
          ? "throttled"
          : response.text.includes("Wrong email or password")
            ? "credentials"
            : "other",
      );
    }
    expect(answers).toEqual([...Array(5).fill("credentials"), "throttled", "throttled"]);
    const owner = await submitPageFormFrom(SECOND, `${appUrl()}/sign-in`, { email, password: PASSWORD });
    expect(owner.status).toBe(303);
    expect(new URL(String(owner.headers.location), appUrl()).pathname).toBe("/wallet");
  });
});

describe("sign-ups per address (SIGNUPS_PER_HOUR, default 5)", () => {
  it("allows 5 sign-ups an hour from one address through the API, refuses the 6th, and not another address", async () => {
    // The proxied app trusts one hop: X-Forwarded-For is what a proxy in front of it would have written.
    const from = (address: string) => ({ "x-forwarded-for": address });
    const signUp = (address: string) =>
      postJsonFrom(
        FIRST,
        `${proxiedUrl}/api/auth/sign-up/email`,
        { email: `su-${randomUUID()}@example.test`, password: PASSWORD, name: "Sign Up" },
        from(address),
      );
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await signUp("203.0.113.200")).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect((await signUp("203.0.113.201")).status).toBe(200);
  });

  it("counts the sign-up page's server action against the same limit", async () => {
    const answers: string[] = [];
    for (let i = 0; i < 6; i++) {
      const response = await submitPageFormFrom(
        FIRST,
        `${proxiedUrl}/sign-up`,
        { email: `su-page-${randomUUID()}@example.test`, password: PASSWORD },
        { "x-forwarded-for": "203.0.113.210" },
      );
      // A created account is sent to its wallet (303); a refused one stays on the form with the sentence (200).
      answers.push(
        response.status === 303
          ? new URL(String(response.headers.location), proxiedUrl).pathname
          : response.text.includes("Too many accounts were created from your network")
            ? "throttled"
            : `HTTP ${response.status}`,
      );
    }
    expect(answers).toEqual([...Array(5).fill("/wallet"), "throttled"]);
  });
});

describe("account fields at better-auth's own endpoint", () => {
  it("refuses a 101-character name and a 309-character email with 400, and a 1,000,000-character name with 413", async () => {
    const url = `${appUrl()}/api/auth/sign-up/email`;
    const base = { email: `f-${randomUUID()}@example.test`, password: PASSWORD };
    const longName = await postJsonFrom(SECOND, url, { ...base, name: "n".repeat(101) });
    expect(longName.status).toBe(400);
    expect(longName.json.code).toBe("INVALID_NAME");
    const longEmail = await postJsonFrom(SECOND, url, { ...base, email: `${"a".repeat(297)}@example.com`, name: "A" });
    expect(longEmail.status).toBe(400);
    expect(longEmail.json.code).toBe("INVALID_EMAIL");
    const huge = await postJsonFrom(SECOND, url, { ...base, name: "n".repeat(1_000_000) });
    expect(huge.status).toBe(413);
    expect(huge.json.code).toBe("payload_too_large");
    const users = await testPool().query(`SELECT 1 FROM "user" WHERE email = $1`, [base.email]);
    expect(users.rowCount).toBe(0);
  });

  it("offers only the endpoints the product uses: others are 404 problem+json", async () => {
    for (const path of ["/update-user", "/change-email", "/delete-user", "/list-sessions", "/change-password"]) {
      const response = await postJsonFrom(FIRST, `${appUrl()}/api/auth${path}`, { name: "x" });
      expect(response.status, path).toBe(404);
      expect(response.json.code).toBe("not_found");
    }
  });
});

describe("C23: cross-origin state changes with the session cookie", () => {
  let adminCookie = "";
  beforeAll(async () => {
    const email = `c23-${randomUUID()}@example.test`;
    await createUser({ email, password: PASSWORD, role: "admin" });
    const signIn = await postJsonFrom(SECOND, `${appUrl()}/api/auth/sign-in/email`, { email, password: PASSWORD });
    adminCookie = String(signIn.headers["set-cookie"]?.[0]).split(";")[0]!;
  });
  const attackerOrigin = () => `http://127.0.0.1:${Number(new URL(appUrl()).port) + 7}`;

  it("refuses a body-less text/plain form POST from another port to the admin reconcile with 403 problem+json", async () => {
    const response = await requestFrom(FIRST, `${appUrl()}/api/v1/admin/reconcile`, {
      method: "POST",
      headers: {
        cookie: adminCookie,
        origin: attackerOrigin(),
        "sec-fetch-site": "same-site",
        "content-type": "text/plain",
      },
    });
    expect(response.status).toBe(403);
    expect(response.headers["content-type"]).toBe("application/problem+json");
    expect(response.json.code).toBe("forbidden");
    // The same request from the app's own page runs.
    const own = await requestFrom(FIRST, `${appUrl()}/api/v1/admin/reconcile`, {
      method: "POST",
      headers: { cookie: adminCookie, origin: new URL(appUrl()).origin, "sec-fetch-site": "same-origin" },
    });
    expect(own.status).toBe(200);
    expect(own.json).toHaveProperty("examined");
  });

  it("refuses a server action with a foreign Origin with a 403 page, never a 500", async () => {
    const response = await submitPageFormFrom(
      FIRST,
      `${appUrl()}/sign-in`,
      { email: "x@example.test", password: "whatever" },
      { origin: attackerOrigin(), "sec-fetch-site": "same-site" },
    );
    expect(response.status).toBe(403);
    expect(response.headers["content-type"]).toContain("text/html");
  });

  it("refuses a cross-origin sign-out with the cookie; a bearer token is not subject to the check", async () => {
    const signOut = await requestFrom(FIRST, `${appUrl()}/api/auth/sign-out`, {
      method: "POST",
      headers: { cookie: adminCookie, origin: attackerOrigin(), "content-type": "application/json" },
      body: "{}",
    });
    expect(signOut.status).toBe(403);
    const user = await createApiUser();
    const viaToken = await api("/api/v1/topups", {
      token: user.token,
      body: { refId: freshRefId("c23"), amount: 100 },
      headers: { origin: attackerOrigin() },
    });
    expect(viaToken.status).toBe(201);
  });
});

describe("C24 and unknown API paths or methods", () => {
  it("answers undecodable URLs with 400: problem+json under /api, a page elsewhere, before authentication", async () => {
    for (const path of ["/api/v1/topups/%ZZ", "/api/v1/topups/%E0%A4%A", "/api/v1/admin/topups/%E0%A4%A/x"]) {
      const response = await requestFrom(FIRST, `${appUrl()}${path}`);
      expect(response.status, path).toBe(400);
      expect(response.headers["content-type"]).toBe("application/problem+json");
      expect(response.json.code).toBe("invalid_request");
    }
    const page = await requestFrom(FIRST, `${appUrl()}/admin/topups/%E0%A4%A/x`);
    expect(page.status).toBe(400);
    expect(page.headers["content-type"]).toContain("text/html");
  });

  it("answers unknown /api paths with 404 problem+json for any method", async () => {
    for (const [method, path] of [
      ["GET", "/api/v1/nope"],
      ["POST", "/api/v1/topups/a/b/c"],
      ["DELETE", "/api/v2/wallet"],
    ] as const) {
      const response = await requestFrom(FIRST, `${appUrl()}${path}`, { method });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.headers["content-type"]).toBe("application/problem+json");
      expect(response.json.code).toBe("not_found");
    }
  });

  it("answers every API route's unsupported methods with 405 problem+json and Allow", async () => {
    const routes = apiRouteFiles();
    expect(routes.length).toBeGreaterThanOrEqual(12);
    for (const route of routes) {
      for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"].filter((m) => !route.methods.includes(m))) {
        const response = await requestFrom(FIRST, `${appUrl()}${route.path}`, { method });
        expect(response.status, `${method} ${route.path}`).toBe(405);
        expect(response.json?.code).toBe("method_not_allowed");
        const allow = String(response.headers.allow).split(", ");
        for (const implemented of route.methods) expect(allow).toContain(implemented);
        expect(allow).not.toContain(method);
      }
    }
  });
});

/** Every `app/api/v1/**\/route.ts`, as a request path (dynamic segments filled) and the methods it implements. */
function apiRouteFiles(): { path: string; methods: string[] }[] {
  const root = join(projectRoot, "app", "api", "v1");
  const found: { path: string; methods: string[] }[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const full = join(dir, entry);
      if (statSync(full).isDirectory()) walk(full);
      else if (entry === "route.ts") {
        const source = readFileSync(full, "utf8");
        const call = /apiRoute(?:<[^>]*>)?\(\{([^}]*)\}\)/.exec(source)?.[1] ?? "";
        const methods = [...call.matchAll(/\b(GET|POST|PUT|PATCH|DELETE)\s*:/g)].map((m) => m[1]!);
        const segments = relative(root, dir).split("/").filter(Boolean);
        const path = `/api/v1/${segments.map((s) => (s.startsWith("[") ? "x" : s)).join("/")}`;
        found.push({ path, methods });
      }
    }
  };
  walk(root);
  return found;
}

describe("security headers", () => {
  const expectCommon = (headers: Record<string, string | string[] | undefined>, where: string) => {
    expect(headers["x-content-type-options"], where).toBe("nosniff");
    expect(headers["referrer-policy"], where).toBe("strict-origin-when-cross-origin");
    expect(headers["x-frame-options"], where).toBe("DENY");
    expect(headers["x-powered-by"], where).toBeUndefined();
    expect(String(headers["content-security-policy"]), where).toContain("frame-ancestors 'none'");
  };

  it("are on every API response, errors and Next.js's own included", async () => {
    for (const [method, path] of [
      ["GET", "/api/v1/health"],
      ["GET", "/api/v1/wallet"],
      ["GET", "/api/v1/nope"],
      ["DELETE", "/api/v1/wallet"],
      ["GET", "/api/v1/topups/%ZZ"],
      ["POST", "/api/v1/bank/webhook"],
      ["GET", "/api/auth/get-session"],
    ] as const) {
      const response = await requestFrom(FIRST, `${appUrl()}${path}`, { method });
      expectCommon(response.headers, `${method} ${path}`);
      expect(response.headers["content-security-policy"]).toBe("default-src 'none'; frame-ancestors 'none'");
    }
  });

  it("give pages a nonce-based policy whose nonce is on every script, fresh per response, without 'unsafe-eval'", async () => {
    const first = await requestFrom(FIRST, `${appUrl()}/sign-in`);
    const second = await requestFrom(FIRST, `${appUrl()}/sign-in`);
    expectCommon(first.headers, "/sign-in");
    const policy = String(first.headers["content-security-policy"]);
    const nonce = /'nonce-([^']+)'/.exec(policy)?.[1];
    expect(nonce).toBeTruthy();
    expect(policy).toContain("'strict-dynamic'");
    expect(policy).not.toContain("unsafe-eval");
    const scripts = [...first.text.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
    expect(scripts.length).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
    expect(String(second.headers["content-security-policy"])).not.toContain(nonce!);
  });
});

describe("OPS_PER_MINUTE (default 60) over HTTP", () => {
  it("500 copies of one new payment released at once get no rate_limited, and one row", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 100_000);
    const orderId = freshRefId("burst");
    const results = await Promise.all(
      Array.from({ length: 500 }, () => api("/api/v1/payments", { token: user.token, body: { orderId, amount: 100 } })),
    );
    const byStatus: Record<number, number> = {};
    for (const r of results) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    // One 201, the rest replays of it (201) or, past IDEMPOTENCY_WAIT_MS, 409 request_in_progress: never 429.
    expect(
      Object.keys(byStatus).filter((status) => status !== "201" && status !== "409"),
      JSON.stringify(byStatus),
    ).toEqual([]);
    const bodies = new Set(results.filter((r) => r.status === 201).map((r) => r.text));
    expect(bodies.size).toBe(1);
    const rows = await testPool().query(`SELECT 1 FROM ledger_entries WHERE user_id = $1`, [user.id]);
    expect(rows.rowCount).toBe(1);
  });

  it("80 distinct new payments in a burst: some get 429 rate_limited with Retry-After and leave no row; replays are never limited", async () => {
    const user = await createApiUser();
    await seedBalance(user.id, 100_000);
    const orderIds = Array.from({ length: 80 }, () => freshRefId("many"));
    const results = await Promise.all(
      orderIds.map((orderId) => api("/api/v1/payments", { token: user.token, body: { orderId, amount: 100 } })),
    );
    const limited = results.filter((r) => r.status === 429);
    expect(limited).toHaveLength(20);
    for (const r of limited) {
      expect(r.json.code).toBe("rate_limited");
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    }
    const rows = await testPool().query(`SELECT ref_id FROM ledger_entries WHERE user_id = $1`, [user.id]);
    expect(rows.rowCount).toBe(80 - limited.length);
    // A key with a row answers as before, even now that the user is over the limit.
    const accepted = orderIds[results.findIndex((r) => r.status === 201)]!;
    const replay = await api("/api/v1/payments", { token: user.token, body: { orderId: accepted, amount: 100 } });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
  });
});

describe("an https deployment (APP_URL is https)", () => {
  let https: Service | null = null;
  let httpsUrl = "";
  beforeAll(async () => {
    const port = await freePort();
    https = await startExtraApp({
      name: "https-app",
      port,
      bankUrl: testStack().bankUrl!,
      // TLS is terminated in front of the app; the app itself still listens on plain HTTP here.
      env: { APP_URL: `https://127.0.0.1:${port}`, PORT: String(port) },
    });
    httpsUrl = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await https?.stop();
  });

  it("sends Strict-Transport-Security on pages and API responses, and marks the session cookie Secure", async () => {
    for (const path of ["/api/v1/health", "/sign-in", "/api/v1/nope"]) {
      const response = await requestFrom(FIRST, `${httpsUrl}${path}`);
      expect(String(response.headers["strict-transport-security"]), path).toMatch(
        /^max-age=\d{8,}; includeSubDomains$/,
      );
    }
    const email = await newAccount("https");
    const signIn = await postJsonFrom(SECOND, `${httpsUrl}/api/auth/sign-in/email`, { email, password: PASSWORD });
    expect(signIn.status).toBe(200);
    const cookie = String(signIn.headers["set-cookie"]?.[0]);
    expect(cookie).toMatch(/^__Secure-/);
    expect(cookie).toMatch(/; Secure/i);
  });

  it("sends no Strict-Transport-Security over plain http (the test stack's app)", async () => {
    const response = await requestFrom(FIRST, `${appUrl()}/api/v1/health`);
    expect(response.headers["strict-transport-security"]).toBeUndefined();
  });
});
