// Merchant references (contract section 5): `topup:<userId>:<refId>`, split on the first two colons only.
import { describe, expect, it } from "vitest";
import {
  merchantRefFor,
  parseMerchantRef,
  parsePayoutMerchantRef,
  payoutMerchantRefFor,
} from "@/lib/bank/merchant-ref";

describe("merchantRefFor", () => {
  it("builds topup:<userId>:<refId>", () => {
    expect(merchantRefFor("u_123", "order-1")).toBe("topup:u_123:order-1");
  });

  it("keeps ref ids exactly as sent, including ':' and every allowed character", () => {
    expect(merchantRefFor("u1", "a:b:c")).toBe("topup:u1:a:b:c");
    expect(merchantRefFor("u1", "Az09._:-")).toBe("topup:u1:Az09._:-");
  });

  it("accepts 128-character ref ids and refuses 129", () => {
    expect(merchantRefFor("u1", "x".repeat(128))).toBe(`topup:u1:${"x".repeat(128)}`);
    expect(() => merchantRefFor("u1", "x".repeat(129))).toThrow(RangeError);
  });

  it.each(["", " ref", "ref ", "réf", "a/b", "a b", "a\nb"])("refuses ref id %j", (refId) => {
    expect(() => merchantRefFor("u1", refId)).toThrow(RangeError);
  });

  it.each(["", "a:b", "a b", "u\n1", "ü", "x".repeat(256)])("refuses user id %j", (userId) => {
    expect(() => merchantRefFor(userId, "r1")).toThrow(RangeError);
  });
});

describe("parseMerchantRef", () => {
  it("splits on the first two colons only", () => {
    expect(parseMerchantRef("topup:u1:a:b:c")).toEqual({ userId: "u1", refId: "a:b:c" });
    expect(parseMerchantRef("topup:u1::")).toEqual({ userId: "u1", refId: ":" });
  });

  it("round-trips merchantRefFor", () => {
    for (const [userId, refId] of [
      ["Xq3vT9kLmN2pR5sW8yZ1aB4cD7eF0gH6", "sbx-dup-2026:01:01"],
      ["u", "x".repeat(128)],
      ["user.with-dots_and~tilde", "r"],
    ] as const) {
      expect(parseMerchantRef(merchantRefFor(userId, refId))).toEqual({ userId, refId });
    }
  });

  it.each([
    ["empty", ""],
    ["no prefix", "u1:r1"],
    ["other type", "reward:u1:r1"],
    ["prefix case", "TOPUP:u1:r1"],
    ["no ref id separator", "topup:u1"],
    ["empty user id", "topup::r1"],
    ["empty ref id", "topup:u1:"],
    ["invalid ref id character", "topup:u1:r 1"],
    ["ref id too long", `topup:u1:${"x".repeat(129)}`],
    ["leading space", " topup:u1:r1"],
  ])("returns null for %s", (_label, value) => {
    expect(parseMerchantRef(value)).toBeNull();
  });

  it("returns null for non-strings instead of throwing", () => {
    expect(parseMerchantRef(undefined as unknown as string)).toBeNull();
    expect(parseMerchantRef(42 as unknown as string)).toBeNull();
  });
});

describe("payout merchant references", () => {
  it("builds payout:<userId>:<refId> and parses it back, split on the first two colons", () => {
    expect(payoutMerchantRefFor("u1", "sbx-po-dup-1:2")).toBe("payout:u1:sbx-po-dup-1:2");
    expect(parsePayoutMerchantRef("payout:u1:sbx-po-dup-1:2")).toEqual({ userId: "u1", refId: "sbx-po-dup-1:2" });
  });

  it("refuses the same invalid parts as top-up references", () => {
    expect(() => payoutMerchantRefFor("a:b", "r1")).toThrow(RangeError);
    expect(() => payoutMerchantRefFor("u1", "x".repeat(129))).toThrow(RangeError);
  });

  it("keeps the two kinds apart: a payout's reference is never read as a top-up's, nor the reverse", () => {
    expect(parseMerchantRef("payout:u1:r1")).toBeNull();
    expect(parsePayoutMerchantRef("topup:u1:r1")).toBeNull();
    expect(parsePayoutMerchantRef("payout:u1:")).toBeNull();
  });
});
