/**
 * C16: `NODE_ENV=production next start` (the built app, as `npm start` and every stack run it) refuses to start
 * with the published webhook secret, a short one, or none, and likewise for the session secret: it exits non-zero
 * naming the variable (next.config.ts and instrumentation.ts, contract section 9). The control: the same command with
 * two fresh secrets starts and serves, so each refusal is the secret check's and nothing else's.
 *
 * C33: `NEXT_PHASE=phase-production-build` in the environment of a bare `next start` (which made Next.js skip
 * instrumentation.ts, and lib/env.ts skip the check) switches nothing off: the published secret is still refused,
 * and the variable itself is named as a reason to refuse. Negative control, run by hand: with the check back in
 * instrumentation.ts alone (next.config.ts exporting the plain object, no phase), these two tests fail: the app
 * starts and serves with the published secret.
 */
import { describe, expect, it } from "vitest";
import { freePort, waitForHttp } from "../../scripts/lib/ports";
import { randomAuthSecret, randomWebhookSecret } from "../../scripts/lib/secrets";
import { spawnApp } from "../../scripts/lib/stack";
import { testStack } from "../helpers/stack";

/** A refused start exits within a few seconds; 60 s only bounds a start that would hang instead. */
const EXIT_WAIT_MS = 60_000;

async function startWith(secrets: Record<string, string | undefined>) {
  const port = await freePort();
  const app = spawnApp({
    name: "c16-app",
    port,
    log: "silent",
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: testStack().databaseUrl,
      BANK_URL: "http://127.0.0.1:9",
      MAIL_DELIVERY: "off",
      ...secrets,
    },
  });
  return { app, port };
}

async function refusal(secrets: Record<string, string | undefined>): Promise<{ code: number | null; output: string }> {
  const { app } = await startWith(secrets);
  let timer: NodeJS.Timeout | undefined;
  try {
    const exit = await Promise.race([
      app.exited,
      new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), EXIT_WAIT_MS))),
    ]);
    if (exit === null) throw new Error(`the app did not exit within ${EXIT_WAIT_MS} ms:\n${app.recentOutput()}`);
    return { code: exit.code, output: app.recentOutput() };
  } finally {
    clearTimeout(timer);
    await app.stop();
  }
}

const fresh = () => ({ BANK_WEBHOOK_SECRETS: randomWebhookSecret(), BETTER_AUTH_SECRET: randomAuthSecret() });

describe("C16, C33: the server refuses to start with unusable secrets", () => {
  const cases: Array<[string, string, string | undefined, RegExp]> = [
    [
      "the published webhook secret",
      "BANK_WEBHOOK_SECRETS",
      "whsec_dev_only_change_me",
      /published in this repository/,
    ],
    ["an 8-byte webhook secret", "BANK_WEBHOOK_SECRETS", "whsec_ab", /shorter than 32 bytes/],
    ["no webhook secret", "BANK_WEBHOOK_SECRETS", undefined, /is missing/],
    ["the published session secret", "BETTER_AUTH_SECRET", "dev-only-secret-change-me-0123456789abcdef", /published/],
    ["a short session secret", "BETTER_AUTH_SECRET", "0123456789", /shorter than 32 bytes/],
    ["no session secret", "BETTER_AUTH_SECRET", undefined, /is missing/],
  ];
  for (const [what, name, value, reason] of cases) {
    it(`C16: NODE_ENV=production next start with ${what} exits non-zero naming ${name}`, async () => {
      const { code, output } = await refusal({ ...fresh(), [name]: value });
      expect(code).not.toBe(0);
      expect(code).not.toBeNull();
      expect(output).toMatch(new RegExp(`${name}[^\\n]*${reason.source}`));
      if (value) expect(output).not.toContain(value);
    });
  }

  it("C33: NEXT_PHASE=phase-production-build at run time does not turn the check off: the published secret is refused", async () => {
    const published = "dev-only-secret-change-me-0123456789abcdef";
    const { code, output } = await refusal({
      ...fresh(),
      BETTER_AUTH_SECRET: published,
      NEXT_PHASE: "phase-production-build",
    });
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(output).toMatch(/BETTER_AUTH_SECRET[^\n]*published in this repository/);
    expect(output).not.toContain(published);
  });

  it("C33: a server whose environment says NEXT_PHASE=phase-production-build is refused, naming NEXT_PHASE", async () => {
    const { code, output } = await refusal({ ...fresh(), NEXT_PHASE: "phase-production-build" });
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(output).toMatch(/NEXT_PHASE is phase-production-build in a server's environment/);
  });

  it("control: the same start with two fresh secrets serves (the refusals above are the secret check's)", async () => {
    const { app, port } = await startWith(fresh());
    try {
      await waitForHttp(`http://127.0.0.1:${port}/api/v1/health`, EXIT_WAIT_MS);
      expect(app.exitStatus()).toBeNull();
    } finally {
      await app.stop();
    }
  });
});
