// Webhook signatures (contract section 5, docs/development.md note 22): sign/verify round trip, rotation, staleness,
// tampering, malformed headers, and that the decision goes through crypto.timingSafeEqual.
import { createHmac } from "node:crypto";
import * as crypto from "node:crypto";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_TOLERANCE_SECONDS, signWebhook, verifyWebhookSignature } from "@/lib/bank/signature";

// Pass-through spy on timingSafeEqual: the real comparison runs; tests can observe it or override one call.
vi.mock("node:crypto", async (importOriginal) => {
  const original = await importOriginal<typeof import("node:crypto")>();
  return { ...original, timingSafeEqual: vi.fn(original.timingSafeEqual) };
});

const NOW_S = 1_767_225_600; // 2026-01-01T00:00:00Z, any fixed clock
const SECRET = "whsec_test_primary";
const OLD_SECRET = "whsec_test_old";
const body = Buffer.from(
  JSON.stringify({
    id: "evt_1",
    type: "charge.succeeded",
    created: "2026-01-01T00:00:00.000Z",
    data: { chargeId: "ch_1", merchantRef: "topup:u1:r1", amount: 100, currency: "USD" },
  }),
);

function verify(header: string | null, overrides: Partial<Parameters<typeof verifyWebhookSignature>[0]> = {}) {
  return verifyWebhookSignature({ rawBody: body, header, secrets: [SECRET], nowSeconds: NOW_S, ...overrides });
}

beforeEach(() => {
  vi.mocked(crypto.timingSafeEqual).mockClear();
});

describe("signWebhook", () => {
  it("produces t=<unix seconds>,v1=<hex HMAC-SHA256(secret, '<t>.<raw body>')>", () => {
    const expected = createHmac("sha256", SECRET).update(`${NOW_S}.`).update(body).digest("hex");
    expect(signWebhook(body, [SECRET], NOW_S)).toBe(`t=${NOW_S},v1=${expected}`);
  });

  it("signs a string as its UTF-8 bytes, identical to the Buffer form", () => {
    const text = '{"note":"café ✓"}';
    expect(signWebhook(text, [SECRET], NOW_S)).toBe(signWebhook(Buffer.from(text, "utf8"), [SECRET], NOW_S));
  });

  it("emits one v1 per secret, in order (rotation)", () => {
    const header = signWebhook(body, [SECRET, OLD_SECRET], NOW_S);
    const parts = header.split(",");
    expect(parts).toHaveLength(3);
    expect(parts[1]).toBe(signWebhook(body, [SECRET], NOW_S).split(",")[1]);
    expect(parts[2]).toBe(signWebhook(body, [OLD_SECRET], NOW_S).split(",")[1]);
  });

  it("truncates fractional seconds", () => {
    expect(signWebhook(body, [SECRET], NOW_S + 0.9)).toBe(signWebhook(body, [SECRET], NOW_S));
  });

  it("refuses an empty secret list or an empty secret (configuration bugs)", () => {
    expect(() => signWebhook(body, [], NOW_S)).toThrow(TypeError);
    expect(() => signWebhook(body, [""], NOW_S)).toThrow(TypeError);
    expect(() => signWebhook(body, [SECRET], Number.NaN)).toThrow(TypeError);
  });
});

describe("verifyWebhookSignature", () => {
  it("accepts its own signature", () => {
    expect(verify(signWebhook(body, [SECRET], NOW_S))).toEqual({ ok: true });
  });

  it("rotation: the app with [new, old] accepts a bank still signing with old only", () => {
    const header = signWebhook(body, [OLD_SECRET], NOW_S);
    expect(verify(header, { secrets: [SECRET, OLD_SECRET] })).toEqual({ ok: true });
    expect(verify(header, { secrets: [SECRET] })).toEqual({ ok: false, reason: "mismatch" });
  });

  it("rotation: a bank signing with [new, old] is accepted by an app knowing either one", () => {
    const header = signWebhook(body, [SECRET, OLD_SECRET], NOW_S);
    expect(verify(header, { secrets: [OLD_SECRET] })).toEqual({ ok: true });
    expect(verify(header, { secrets: [SECRET] })).toEqual({ ok: true });
    expect(verify(header, { secrets: ["whsec_other"] })).toEqual({ ok: false, reason: "mismatch" });
  });

  it("accepts exactly at the tolerance edge and refuses one second past it, both directions", () => {
    const old = signWebhook(body, [SECRET], NOW_S - DEFAULT_TOLERANCE_SECONDS);
    expect(verify(old)).toEqual({ ok: true });
    expect(verify(signWebhook(body, [SECRET], NOW_S - DEFAULT_TOLERANCE_SECONDS - 1))).toEqual({
      ok: false,
      reason: "stale",
    });
    expect(verify(signWebhook(body, [SECRET], NOW_S + DEFAULT_TOLERANCE_SECONDS))).toEqual({ ok: true });
    expect(verify(signWebhook(body, [SECRET], NOW_S + DEFAULT_TOLERANCE_SECONDS + 1))).toEqual({
      ok: false,
      reason: "stale",
    });
  });

  it("honours a custom tolerance", () => {
    const header = signWebhook(body, [SECRET], NOW_S - 10);
    expect(verify(header, { toleranceSeconds: 10 })).toEqual({ ok: true });
    expect(verify(header, { toleranceSeconds: 9 })).toEqual({ ok: false, reason: "stale" });
  });

  it("refuses a body with any single byte changed", () => {
    const header = signWebhook(body, [SECRET], NOW_S);
    for (const index of [0, Math.floor(body.length / 2), body.length - 1]) {
      const tampered = Buffer.from(body);
      tampered[index] = (tampered[index] as number) ^ 0x01;
      expect(verify(header, { rawBody: tampered })).toEqual({ ok: false, reason: "mismatch" });
    }
  });

  it("verifies raw bytes, not a re-serialised value (whitespace matters)", () => {
    const header = signWebhook(body, [SECRET], NOW_S);
    const reserialised = Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 2));
    expect(verify(header, { rawBody: reserialised })).toEqual({ ok: false, reason: "mismatch" });
  });

  it("refuses a moved timestamp (t is part of the MAC)", () => {
    const header = signWebhook(body, [SECRET], NOW_S);
    expect(verify(header.replace(`t=${NOW_S}`, `t=${NOW_S - 1}`))).toEqual({ ok: false, reason: "mismatch" });
  });

  it("reports a mismatch for a wrong signature even when the timestamp is also stale", () => {
    const header = signWebhook(body, ["whsec_wrong"], NOW_S - 10_000);
    expect(verify(header)).toEqual({ ok: false, reason: "mismatch" });
  });

  it("passes when any of several v1 values matches", () => {
    const good = signWebhook(body, [SECRET], NOW_S).split(",")[1];
    const header = `t=${NOW_S},v1=${"0".repeat(64)},${good}`;
    expect(verify(header)).toEqual({ ok: true });
  });

  it("ignores unknown schemes beside v1, and spaces around parts", () => {
    const [t, v1] = signWebhook(body, [SECRET], NOW_S).split(",");
    expect(verify(`${t}, v0=abc, ${v1}`)).toEqual({ ok: true });
  });

  it("accepts uppercase hex", () => {
    const [t, v1] = signWebhook(body, [SECRET], NOW_S).split(",") as [string, string];
    expect(verify(`${t},v1=${v1.slice(3).toUpperCase()}`)).toEqual({ ok: true });
  });

  it("reports a missing header", () => {
    expect(verify(null)).toEqual({ ok: false, reason: "missing" });
    expect(verify("")).toEqual({ ok: false, reason: "missing" });
    expect(verify("   ")).toEqual({ ok: false, reason: "missing" });
  });

  it.each([
    ["no v1", `t=${NOW_S}`],
    ["no t", `v1=${"a".repeat(64)}`],
    ["two t", `t=${NOW_S},t=${NOW_S},v1=${"a".repeat(64)}`],
    ["non-numeric t", `t=abc,v1=${"a".repeat(64)}`],
    ["negative t", `t=-5,v1=${"a".repeat(64)}`],
    ["short v1", `t=${NOW_S},v1=${"a".repeat(63)}`],
    ["long v1", `t=${NOW_S},v1=${"a".repeat(66)}`],
    ["non-hex v1 (Buffer.from would truncate silently)", `t=${NOW_S},v1=${"a".repeat(62)}zz`],
    ["part without =", `t=${NOW_S},garbage,v1=${"a".repeat(64)}`],
    ["empty key", `t=${NOW_S},=x,v1=${"a".repeat(64)}`],
    ["just commas", ",,,"],
    ["over-long header", `t=${NOW_S},${`v0=${"a".repeat(100)},`.repeat(50)}v1=${"a".repeat(64)}`],
  ])("reports a malformed header: %s", (_label, header) => {
    expect(verify(header)).toEqual({ ok: false, reason: "malformed" });
  });

  it("refuses an empty secret list (configuration bug)", () => {
    expect(() => verify(signWebhook(body, [SECRET], NOW_S), { secrets: [] })).toThrow(TypeError);
    expect(() => verify(signWebhook(body, [SECRET], NOW_S), { secrets: [""] })).toThrow(TypeError);
  });
});

describe("constant-time comparison", () => {
  it("compares with crypto.timingSafeEqual on two 32-byte buffers, for every secret x signature pair", () => {
    const spy = vi.mocked(crypto.timingSafeEqual);
    const header = `t=${NOW_S},v1=${"0".repeat(64)},v1=${"1".repeat(64)}`;
    expect(verify(header, { secrets: [SECRET, OLD_SECRET] })).toEqual({ ok: false, reason: "mismatch" });
    expect(spy).toHaveBeenCalledTimes(4);
    for (const [a, b] of spy.mock.calls) {
      expect(Buffer.isBuffer(a) && Buffer.isBuffer(b)).toBe(true);
      expect((a as Buffer).length).toBe(32);
      expect((b as Buffer).length).toBe(32);
    }
  });

  it("the accept decision is timingSafeEqual's answer (negative control: forcing it false refuses a valid header)", () => {
    const spy = vi.mocked(crypto.timingSafeEqual);
    spy.mockImplementationOnce(() => false);
    expect(verify(signWebhook(body, [SECRET], NOW_S))).toEqual({ ok: false, reason: "mismatch" });
    expect(spy).toHaveBeenCalledTimes(1);
  });

  it("does not stop comparing at the first match (work does not depend on which signature matched)", () => {
    const spy = vi.mocked(crypto.timingSafeEqual);
    const header = signWebhook(body, [SECRET, OLD_SECRET], NOW_S);
    expect(verify(header, { secrets: [SECRET, OLD_SECRET] })).toEqual({ ok: true });
    expect(spy).toHaveBeenCalledTimes(4);
  });
});
