/**
 * Request validation (contract section 1, cases C07, C08 and C32): raw JSON tokens, amounts, and the operation
 * validators shared by route handlers and server actions.
 */
import { describe, expect, it } from "vitest";
import { parseAmountToken, rawTopLevelMembers, RawJsonError } from "../../lib/http/raw-json";
import {
  formToRaw,
  validatePaymentRequest,
  validateRewardRequest,
  validateTopupRequest,
} from "../../lib/http/operation-requests";
import { isJsonContentType } from "../../lib/http/read-json-body";
import { adminTopupsQuerySchema, entriesQuerySchema, parseQuery } from "../../lib/http/list-query";
import { isFormRefId, mintFormRefId } from "../../lib/web/form-refs";
import { formatMinor } from "../../lib/money";
import { refundRequestSchema } from "../../lib/refunds/refund-request";

const rules = { maxAmountMinor: 1_000_000, walletCurrency: "USD" };

function topup(text: string) {
  return validateTopupRequest(JSON.parse(text), rawTopLevelMembers(text), rules);
}

describe("rawTopLevelMembers", () => {
  it("returns each member's exact source token", () => {
    const members = rawTopLevelMembers(' { "refId" : "a\\"b" , "amount":1e3, "n": {"x":[1,"}"]}, "z": null } ');
    expect(members.get("refId")).toBe('"a\\"b"');
    expect(members.get("amount")).toBe("1e3");
    expect(members.get("n")).toBe('{"x":[1,"}"]}');
    expect(members.get("z")).toBe("null");
  });

  it("handles the empty object and escaped names", () => {
    expect(rawTopLevelMembers("{}").size).toBe(0);
    expect(rawTopLevelMembers('{"am\\u006fun\\u0074":5}').get("amount")).toBe("5");
  });

  it.each(['{"a":1,"a":2}', "[1]", '{"a":1} x', '{"a" 1}', '{"a":1,}', '{"a":"x', '{"a":[1}', ""])(
    "refuses %j",
    (text) => {
      expect(() => rawTopLevelMembers(text)).toThrow(RawJsonError);
    },
  );
});

describe("C07: amounts are judged on the raw token", () => {
  it.each([
    ['""', null],
    ['" "', null],
    ['"1e3"', null],
    ["1e21", null],
    ["9007199254740993", null],
    ["-500", null],
    ["0", null],
    ["10.005", null],
    ['"500abc"', null],
    ['"Infinity"', null],
    ["100000000000000000000000000000000000000000000000000000000000001E-60", null],
    ["100.0", null],
    ['"100"', null],
    ["0100", null],
    ["1000001", null],
    ["1", 1],
    ["1000000", 1_000_000],
  ])("token %s → %s", (token, expected) => {
    expect(parseAmountToken(token, 1_000_000)).toBe(expected);
  });

  it("is exact above 2^53 (compared as BigInt)", () => {
    expect(parseAmountToken("9007199254740993", Number.MAX_SAFE_INTEGER)).toBeNull();
    expect(parseAmountToken("9007199254740991", Number.MAX_SAFE_INTEGER)).toBe(Number.MAX_SAFE_INTEGER);
    expect(parseAmountToken(undefined, 10)).toBeNull();
  });
});

describe("operation validators", () => {
  it("accepts a well-formed top-up and defaults the currency", () => {
    expect(topup('{"refId":"r-1","amount":2500}')).toEqual({
      ok: true,
      value: { refId: "r-1", amountMinor: 2500, currency: "USD" },
    });
    expect(topup('{"refId":"r-1","amount":2500,"currency":"USD"}')).toMatchObject({ ok: true });
  });

  it.each([
    '{"refId":"r-1","amount":1e3}',
    '{"refId":"r-1","amount":"100"}',
    '{"refId":"r 1","amount":100}',
    '{"refId":"","amount":100}',
    '{"amount":100}',
    '{"refId":"r-1"}',
    '{"refId":"r-1","amount":100,"extra":1}',
    '{"refId":"r-1","amount":100,"currency":"EUR"}',
    '{"refId":"r-1","amount":100,"currency":"usd"}',
    '{"refId":5,"amount":100}',
  ])("refuses %s with a detail", (text) => {
    const result = topup(text);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.detail.length).toBeGreaterThan(0);
  });

  it("payments and rewards follow the same rules", () => {
    const text = '{"orderId":"o-1","amount":5}';
    expect(validatePaymentRequest(JSON.parse(text), rawTopLevelMembers(text), rules)).toEqual({
      ok: true,
      value: { orderId: "o-1", amountMinor: 5, currency: "USD" },
    });
    expect(
      validatePaymentRequest({ orderId: "o 1", amount: 5 }, rawTopLevelMembers('{"orderId":"o 1","amount":5}'), rules)
        .ok,
    ).toBe(false);
    expect(validateRewardRequest({ adId: "ad-1" })).toEqual({ ok: true, value: { adId: "ad-1" } });
    expect(validateRewardRequest({ adId: "a".repeat(118) }).ok).toBe(false);
    expect(validateRewardRequest({ adId: "ad-1", x: 1 }).ok).toBe(false);
  });

  it("form fields go through the same validator (server actions)", () => {
    const refId = mintFormRefId();
    const { value, raw } = formToRaw({ refId, amount: "2500" });
    expect(validateTopupRequest(value, raw, rules, "form")).toMatchObject({
      ok: true,
      value: { refId, amountMinor: 2500 },
    });
    const bad = formToRaw({ refId, amount: "25.00" });
    expect(validateTopupRequest(bad.value, bad.raw, rules, "form").ok).toBe(false);
  });

  it("C20: API clients may not use the forms' web: namespace; the forms take only what the server mints", () => {
    const formRef = mintFormRefId();
    expect(formRef).toMatch(/^web:[0-9a-f-]{36}$/);
    expect(isFormRefId(formRef)).toBe(true);
    expect(mintFormRefId()).not.toBe(formRef);
    const body = (ref: string) => `{"refId":${JSON.stringify(ref)},"amount":5}`;
    const order = (ref: string) => `{"orderId":${JSON.stringify(ref)},"amount":5}`;
    // The API refuses the reserved prefix on both money routes, whatever follows it.
    for (const ref of [formRef, "web:", "web:x", "web:web-topup-3"]) {
      expect(topup(body(ref))).toEqual({
        ok: false,
        detail: 'refId: must not start with "web:" (reserved for the wallet page\'s forms)',
      });
      const payment = validatePaymentRequest(JSON.parse(order(ref)), rawTopLevelMembers(order(ref)), rules);
      expect(payment.ok).toBe(false);
    }
    // Everything else stays the client's, the old count scheme's names included; keys are exact, so WEB: is fine.
    for (const ref of ["web-topup-3", "web-order-1", "WEB:x", "xweb:1", "web"]) {
      expect(topup(body(ref))).toMatchObject({ ok: true, value: { refId: ref } });
    }
    // The form door takes exactly the minted shape: no count-scheme name, no upper case, no other prefix.
    for (const ref of ["web-topup-3", formRef.toUpperCase(), `${formRef}0`, formRef.replace("web:", "api:")]) {
      const { value, raw } = formToRaw({ refId: ref, amount: "5" });
      expect(validateTopupRequest(value, raw, rules, "form").ok).toBe(false);
      const forOrder = formToRaw({ orderId: ref, amount: "5" });
      expect(validatePaymentRequest(forOrder.value, forOrder.raw, rules, "form").ok).toBe(false);
    }
  });
});

describe("C32: dot segments as references", () => {
  const dotsDetail = (field: string) =>
    `${field}: must not be "." or ".." (URL paths drop these segments; docs/decisions/049)`;

  it('C32: a new top-up, payment or refund named "." or ".." is refused with a detail that says why', () => {
    for (const ref of [".", ".."]) {
      expect(topup(`{"refId":${JSON.stringify(ref)},"amount":5}`)).toEqual({ ok: false, detail: dotsDetail("refId") });
      const order = `{"orderId":${JSON.stringify(ref)},"amount":5}`;
      expect(validatePaymentRequest(JSON.parse(order), rawTopLevelMembers(order), rules)).toEqual({
        ok: false,
        detail: dotsDetail("orderId"),
      });
      const refund = refundRequestSchema.safeParse({ refundId: ref, amount: 5 });
      expect(refund.success).toBe(false);
      expect(refund.error?.issues[0]?.message).toBe(dotsDetail("refundId").slice("refundId: ".length));
    }
  });

  it("C32: other runs of dots are ordinary segments, and a reward's ad id of dots keys no dot segment", () => {
    for (const ref of ["...", "....", ".a", "a.", "..a", "a..", ".:."]) {
      expect(topup(`{"refId":${JSON.stringify(ref)},"amount":5}`)).toMatchObject({ ok: true, value: { refId: ref } });
      expect(refundRequestSchema.safeParse({ refundId: ref, amount: 5 }).success).toBe(true);
    }
    // The reward's ref id is `<adId>:<day>` (contract section 6): `..:2026-12-01` is an ordinary segment.
    expect(validateRewardRequest({ adId: ".." })).toEqual({ ok: true, value: { adId: ".." } });
  });
});

describe("small parsers", () => {
  it("content type must be application/json, parameters allowed", () => {
    expect(isJsonContentType("application/json")).toBe(true);
    expect(isJsonContentType("Application/JSON; charset=utf-8")).toBe(true);
    expect(isJsonContentType("text/plain")).toBe(false);
    expect(isJsonContentType("application/json-patch+json")).toBe(false);
    expect(isJsonContentType(null)).toBe(false);
  });

  it("list queries", () => {
    const admin = (text: string) => parseQuery(adminTopupsQuerySchema, new URLSearchParams(text));
    expect(admin("")).toEqual({ ok: true, value: {} });
    expect(admin("status=failed&limit=100&stuck=1&cursor=abc_-9")).toEqual({
      ok: true,
      value: { status: "failed", limit: 100, stuck: true, cursor: "abc_-9" },
    });
    expect(admin("limit=1&stuck=false").ok && admin("limit=1&stuck=false")).toEqual({
      ok: true,
      value: { limit: 1, stuck: false },
    });
    for (const good of ["1", "9", "10", "99", "100"]) expect(admin(`limit=${good}`).ok).toBe(true);
    const bad = ["limit=0", "limit=101", "limit=1.5", "limit=-1", "limit=01", "limit=", "limit=1e2", "status=done"];
    for (const text of [...bad, "stuck=yes", "cursor=", "cursor=a.b", `cursor=${"a".repeat(257)}`])
      expect(admin(text).ok, text).toBe(false);
    // The statement's filters (docs/decisions/055): an unknown parameter is not read; each filter is bounded.
    const entries = (text: string) => parseQuery(entriesQuerySchema, new URLSearchParams(text));
    expect(entries("sort=desc&limit=2")).toEqual({ ok: true, value: { limit: 2 } });
    expect(entries("type=payment&status=failed&q=Corner%20Coffee&from=2026-12-01&to=2026-12-01")).toEqual({
      ok: true,
      value: { type: "payment", status: "failed", q: "Corner Coffee", from: "2026-12-01", to: "2026-12-01" },
    });
    expect(entries(`q=${"x".repeat(128)}`).ok).toBe(true);
    const hostile = [
      "status=done",
      "type=withdrawal",
      "q=",
      `q=${"x".repeat(129)}`,
      "q=%00",
      "q=a%0Ab",
      "q=%E2%80%AEevil",
      "q=%20padded",
      "from=2026-13-01",
      "from=2026-02-30",
      "from=yesterday",
      "to=2026-12-01T00:00:00Z",
      "from=2026-12-02&to=2026-12-01",
      "from=99999-01-01",
    ];
    for (const text of hostile) expect(entries(text).ok, text).toBe(false);
  });

  it("minor units are written as major units with two decimals", () => {
    expect(formatMinor(2505)).toBe("25.05");
    expect(formatMinor(-5)).toBe("-0.05");
  });
});
