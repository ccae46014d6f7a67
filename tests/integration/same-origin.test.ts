/**
 * Case C23 in process, with its negative control: the real `POST /api/v1/admin/reconcile` handler (route file,
 * route wrapper, better-auth session) receives what a browser sends for an auto-submitted `text/plain` form on
 * another port of the same host, with the admin's cookie and no body.
 *
 * - With the same-origin check: 403 problem+json, and the reconciler never runs.
 * - Negative control: the same request with the check removed (`isSameOrigin` replaced by "always true" through
 *   vi.mock, nothing else changed) runs a reconciler pass: the test above fails on code without the guard.
 *   Run it alone: `npx vitest run --project integration tests/integration/same-origin.test.ts`.
 * tests/http/abuse-limits.test.ts sends the same attack over HTTP to the built app.
 */
import { beforeAll, describe, expect, it, vi } from "vitest";

const control = vi.hoisted(() => ({ checkRemoved: false, passes: 0 }));

vi.mock("../../lib/http/same-origin", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../lib/http/same-origin")>();
  return {
    ...actual,
    isSameOrigin: (...args: Parameters<typeof actual.isSameOrigin>) =>
      control.checkRemoved || actual.isSameOrigin(...args),
  };
});
vi.mock("../../lib/reconciler/reconcile-once", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../lib/reconciler/reconcile-once")>();
  return {
    ...actual,
    reconcileOnce: async () => {
      control.passes += 1;
      return { examined: 0, completed: 0, failed: 0, redriven: 0, skipped: 0 };
    },
  };
});

import { randomUUID } from "node:crypto";
import { POST } from "../../app/api/v1/admin/reconcile/route";
import { auth } from "../../lib/auth/auth";
import { env } from "../../lib/env";
import { createUser } from "../../lib/users/create-user";

const PASSWORD = "correct horse battery staple";
let adminCookie = "";

beforeAll(async () => {
  const email = `c23-${randomUUID()}@example.test`;
  await createUser({ email, password: PASSWORD, role: "admin" });
  const { headers } = await auth().api.signInEmail({ body: { email, password: PASSWORD }, returnHeaders: true });
  adminCookie = headers.get("set-cookie")?.split(";")[0] ?? "";
  expect(adminCookie).toContain("session_token=");
});

/** What Chromium sends for `<form method=post enctype=text/plain>` auto-submitted from http://127.0.0.1:<other port>. */
function crossOriginFormPost(): Request {
  const appOrigin = new URL(env().APP_URL);
  const attackerOrigin = `http://127.0.0.1:${Number(appOrigin.port || 80) + 7}`;
  return new Request(new URL("/api/v1/admin/reconcile", env().APP_URL), {
    method: "POST",
    headers: {
      cookie: adminCookie,
      origin: attackerOrigin,
      "sec-fetch-site": "same-site",
      "sec-fetch-mode": "navigate",
      "content-type": "text/plain",
    },
  });
}

const noParams = { params: Promise.resolve({}) };

describe("C23: a cross-origin, same-site, body-less POST with the admin's cookie", () => {
  it("is refused with 403 problem+json and runs nothing", async () => {
    control.checkRemoved = false;
    const before = control.passes;
    const response = await POST(crossOriginFormPost(), noParams);
    expect(response.status).toBe(403);
    expect(response.headers.get("content-type")).toBe("application/problem+json");
    expect(((await response.json()) as { code: string }).code).toBe("forbidden");
    expect(control.passes).toBe(before);
  });

  it("negative control: with the same-origin check removed, the same request runs a reconciler pass", async () => {
    control.checkRemoved = true;
    try {
      const before = control.passes;
      const response = await POST(crossOriginFormPost(), noParams);
      expect(response.status).toBe(200);
      expect(control.passes).toBe(before + 1);
    } finally {
      control.checkRemoved = false;
    }
  });

  it("still runs for the admin's own page (same-origin)", async () => {
    const sameOrigin = new Request(new URL("/api/v1/admin/reconcile", env().APP_URL), {
      method: "POST",
      headers: { cookie: adminCookie, origin: new URL(env().APP_URL).origin, "sec-fetch-site": "same-origin" },
    });
    const before = control.passes;
    expect((await POST(sameOrigin, noParams)).status).toBe(200);
    expect(control.passes).toBe(before + 1);
  });
});
