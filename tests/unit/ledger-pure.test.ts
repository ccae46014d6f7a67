/**
 * The pure parts of lib/ledger: keys (contract section 1, case C08), fingerprints, views and outcome mapping.
 */
import { describe, expect, it } from "vitest";
import {
  AD_ID_PATTERN,
  isDotSegment,
  isValidNewRefId,
  isValidRefId,
  LEDGER_DIRECTION,
  LEDGER_TYPES,
  operationKey,
} from "../../lib/ledger/keys";
import { canonicalParams, differingFields, fingerprint } from "../../lib/ledger/fingerprint";
import { entryColumns, isTerminal, toLedgerEntry, ENTRY_COLUMNS } from "../../lib/ledger/entry";
import {
  jsonStoredResponse,
  paymentDetailsOf,
  paymentView,
  rewardView,
  statementEntryView,
  topupView,
} from "../../lib/ledger/views";
import { fromExisting } from "../../lib/ledger/outcome";
import { problemStoredResponse } from "../../lib/problems";

describe("keys", () => {
  it.each([
    ["a", true],
    ["A-z_0.9:x", true],
    ["x".repeat(128), true],
    ["x".repeat(129), false],
    ["", false],
    ["k1 ", false],
    [" k1", false],
    ["caf\u00e9", false],
    ["cafe\u0301", false],
    ["\u{1F4B8}", false],
    ["a/b", false],
    ["a\nb", false],
  ])("C08: refId %j valid=%s", (refId, valid) => {
    expect(isValidRefId(refId)).toBe(valid);
  });

  it("rejects non-strings", () => {
    expect(isValidRefId(5)).toBe(false);
    expect(isValidRefId(null)).toBe(false);
    expect(isValidRefId(undefined)).toBe(false);
  });

  it.each([
    [".", true, false],
    ["..", true, false],
    ["...", false, true],
    ["....", false, true],
    [".a", false, true],
    ["a.", false, true],
    ["..a", false, true],
    ["a..", false, true],
    ["a", false, true],
    ["", false, false],
    [". ", false, false],
  ])("C32: %j is a dot segment: %s; names a new operation: %s", (refId, dotSegment, usable) => {
    expect(isDotSegment(refId)).toBe(dotSegment);
    expect(isValidNewRefId(refId)).toBe(usable);
  });

  it("C32: a new operation's ref id is a ref id first; stored dot-segment keys stay readable", () => {
    expect(isValidNewRefId(5)).toBe(false);
    expect(isValidNewRefId(null)).toBe(false);
    expect(isValidNewRefId("x".repeat(129))).toBe(false);
    expect(isValidNewRefId("x".repeat(128))).toBe(true);
    // A row claimed before the rule keeps its key: the webhook and the reconciler still build it.
    expect(isValidRefId("..")).toBe(true);
    expect(operationKey("u1", "topup", "..")).toEqual({ userId: "u1", type: "topup", refId: ".." });
  });

  it("an ad id leaves room for the :YYYY-MM-DD suffix (117 + 11 = 128)", () => {
    expect(AD_ID_PATTERN.test("a".repeat(117))).toBe(true);
    expect(AD_ID_PATTERN.test("a".repeat(118))).toBe(false);
    expect(isValidRefId(`${"a".repeat(117)}:2026-11-29`)).toBe(true);
  });

  it("operationKey keeps the ref id exactly and refuses invalid parts", () => {
    expect(operationKey("u1", "topup", "Ref-1")).toEqual({ userId: "u1", type: "topup", refId: "Ref-1" });
    expect(() => operationKey("", "topup", "r")).toThrow(new TypeError("operationKey: empty userId"));
    expect(() => operationKey("u1", "topup", "r ")).toThrow(new TypeError('operationKey: invalid refId "r "'));
  });

  it("credits (adjustments and chargeback reversals among them) raise; payments, refunds and chargebacks lower the balance", () => {
    expect(LEDGER_TYPES).toEqual([
      "topup",
      "reward",
      "payment",
      "adjustment",
      "refund",
      "chargeback",
      "chargeback_reversal",
      "payout",
      "payout_return",
      "transfer",
      "transfer_in",
      "transfer_reversal",
      "transfer_reversal_out",
    ]);
    expect(LEDGER_DIRECTION).toEqual({
      topup: 1,
      reward: 1,
      payment: -1,
      adjustment: 1,
      refund: -1,
      chargeback: -1,
      chargeback_reversal: 1,
      payout: -1,
      payout_return: 1,
      transfer: -1,
      transfer_in: 1,
      transfer_reversal: 1,
      transfer_reversal_out: -1,
    });
  });
});

describe("fingerprint", () => {
  it("is independent of key order and changes with any value", () => {
    expect(fingerprint("topup", { amount: 1, currency: "USD" })).toBe(
      fingerprint("topup", { currency: "USD", amount: 1 }),
    );
    expect(fingerprint("topup", { amount: 1, currency: "USD" })).not.toBe(
      fingerprint("topup", { amount: 2, currency: "USD" }),
    );
    expect(fingerprint("topup", { amount: 1, currency: "USD" })).not.toBe(
      fingerprint("payment", { amount: 1, currency: "USD" }),
    );
    expect(fingerprint("topup", { amount: 1 })).toMatch(/^[0-9a-f]{64}$/);
  });

  it("does not confuse a number with its string", () => {
    expect(fingerprint("topup", { amount: 1 })).not.toBe(fingerprint("topup", { amount: "1" }));
    expect(canonicalParams({ b: "2", a: 1 })).toBe('{"a":1,"b":"2"}');
  });

  it("refuses unsafe or fractional numbers", () => {
    expect(() => canonicalParams({ amount: 1.5 })).toThrow(new TypeError("fingerprint: amount must be a safe integer"));
    expect(() => canonicalParams({ amount: 2 ** 53 })).toThrow(TypeError);
  });

  it("names the fields that differ, sorted, including one-sided fields", () => {
    expect(differingFields({ amount: 1, currency: "USD" }, { amount: 2, currency: "USD" })).toEqual(["amount"]);
    expect(differingFields({ amount: 1, currency: "USD" }, { currency: "EUR", amount: 2 })).toEqual([
      "amount",
      "currency",
    ]);
    // Sorted by name, whatever order the stored parameters list them in.
    expect(differingFields({ currency: "USD", amount: 1 }, { currency: "EUR", amount: 2 })).toEqual([
      "amount",
      "currency",
    ]);
    expect(differingFields({ amount: 1 }, { amount: 1, adId: "x" })).toEqual(["adId"]);
    expect(differingFields({ amount: 1 }, { amount: 1 })).toEqual([]);
  });
});

const row = {
  user_id: "u1",
  id: 7,
  type: "topup",
  ref_id: "r1",
  amount_minor: 2500,
  currency: "USD",
  fingerprint: "f".repeat(64),
  params: { amount: 2500, currency: "USD" },
  status: "processing",
  failure_reason: null,
  response_status: null,
  response_body: null,
  lease_owner: "w",
  lease_expires_at: new Date("2026-01-01T00:00:30Z"),
  attempt: 2,
  bank_charge_id: "ch_1",
  created_at: new Date("2026-01-01T00:00:00Z"),
  updated_at: new Date("2026-01-01T00:00:01Z"),
};

describe("entry mapping and views", () => {
  it("maps a row and its stored response", () => {
    const entry = toLedgerEntry(row);
    expect(entry).toMatchObject({
      id: 7,
      userId: "u1",
      refId: "r1",
      amountMinor: 2500,
      status: "processing",
      fencingToken: 2,
      bankChargeId: "ch_1",
      response: null,
      leaseOwner: "w",
    });
    expect(toLedgerEntry({ ...row, response_status: 201, response_body: "{}" }).response).toEqual({
      status: 201,
      body: "{}",
    });
    expect(
      toLedgerEntry({
        ...row,
        lease_owner: undefined,
        bank_charge_id: undefined,
        failure_reason: undefined,
        lease_expires_at: undefined,
      }),
    ).toMatchObject({ leaseOwner: null, bankChargeId: null, failureReason: null, leaseExpiresAt: null });
  });

  it("maps every column: the failure reason, settlement counters, flag time, adjustment and refund links, dispute state too", () => {
    const flaggedAt = new Date("2026-01-01T00:05:00Z");
    const full = {
      ...row,
      type: "adjustment",
      status: "failed",
      failure_reason: "declined_by_bank",
      settle_failures: 3,
      settle_last_error: "credit refused",
      settle_flagged_at: flaggedAt,
      adjusts_entry_id: 5,
      refunds_entry_id: 4,
      refunded_minor: 300,
      dispute_status: "lost",
    };
    expect(toLedgerEntry(full)).toEqual({
      id: 7,
      userId: "u1",
      type: "adjustment",
      refId: "r1",
      amountMinor: 2500,
      currency: "USD",
      fingerprint: "f".repeat(64),
      params: { amount: 2500, currency: "USD" },
      status: "failed",
      failureReason: "declined_by_bank",
      response: null,
      leaseOwner: "w",
      leaseExpiresAt: new Date("2026-01-01T00:00:30Z"),
      fencingToken: 2,
      bankChargeId: "ch_1",
      settleFailures: 3,
      settleLastError: "credit refused",
      settleFlaggedAt: flaggedAt,
      adjustsEntryId: 5,
      refundsEntryId: 4,
      refundedMinor: 300,
      disputeStatus: "lost",
      createdAt: new Date("2026-01-01T00:00:00Z"),
      updatedAt: new Date("2026-01-01T00:00:01Z"),
    });
    expect(
      toLedgerEntry({
        ...full,
        settle_last_error: undefined,
        settle_flagged_at: undefined,
        adjusts_entry_id: undefined,
        refunds_entry_id: undefined,
        refunded_minor: undefined,
        dispute_status: undefined,
      }),
    ).toMatchObject({
      settleLastError: null,
      settleFlaggedAt: null,
      adjustsEntryId: null,
      refundsEntryId: null,
      refundedMinor: 0,
      disputeStatus: null,
    });
    expect(toLedgerEntry({ ...full, dispute_status: null }).disputeStatus).toBeNull();
  });

  it("qualifies every column with an alias", () => {
    expect(entryColumns("e").split(", ")).toHaveLength(ENTRY_COLUMNS.split(",").length);
    expect(entryColumns("e")).toMatch(/^e\.user_id, e\.id, /);
    // Each one is exactly `alias.column`: no line break or indentation of the list is carried into a name.
    for (const column of entryColumns("e").split(", ")) expect(column).toMatch(/^e\.[a-z_]+$/);
  });

  it("only succeeded and failed are terminal", () => {
    expect(["initiated", "processing", "succeeded", "failed"].map((s) => isTerminal(s as never))).toEqual([
      false,
      false,
      true,
      true,
    ]);
  });

  it("T of contract section 4, with ISO-8601 UTC times, in a fixed key order", () => {
    const entry = toLedgerEntry(row);
    expect(JSON.stringify(topupView(entry))).toBe(
      '{"refId":"r1","amount":2500,"currency":"USD","status":"processing","failureReason":null,"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:01.000Z"}',
    );
    expect(paymentView(entry)).toMatchObject({ orderId: "r1", amount: 2500 });
    // A payment's payee and note come from its parameters, only as strings, and only when there (decision 055).
    expect(Object.keys(paymentView(entry))).not.toContain("payee");
    const named = { ...entry, params: { amount: 2500, payee: "Corner Coffee", note: "Beans" } };
    expect(JSON.stringify(paymentView(named)).slice(0, 60)).toBe(
      '{"orderId":"r1","payee":"Corner Coffee","note":"Beans","amou',
    );
    expect(paymentDetailsOf({ payee: 7, note: "n" })).toEqual({ note: "n" });
    expect(paymentDetailsOf({ payee: "p", note: 7 })).toEqual({ payee: "p" });
    expect(paymentDetailsOf({})).toEqual({});
    expect(statementEntryView(entry)).toMatchObject({ type: "topup", refId: "r1", amount: 2500, failureReason: null });
    expect(
      rewardView(toLedgerEntry({ ...row, type: "reward", params: { adId: "ad1", day: "2026-01-01" } })),
    ).toMatchObject({ adId: "ad1", day: "2026-01-01", amount: 2500 });
  });

  it("stored responses are exact JSON text", () => {
    expect(jsonStoredResponse(201, { a: 1 })).toEqual({ status: 201, body: '{"a":1}' });
    const problem = problemStoredResponse("insufficient_funds", "no");
    expect(problem.status).toBe(402);
    expect(JSON.parse(problem.body)).toEqual({
      type: "/problems/insufficient_funds",
      title: "Insufficient funds",
      status: 402,
      detail: "no",
      code: "insufficient_funds",
    });
  });
});

describe("fromExisting", () => {
  it("maps a loser's outcomes", () => {
    expect(fromExisting({ kind: "replay", response: { status: 201, body: "x" } })).toEqual({
      kind: "response",
      response: { status: 201, body: "x" },
      replayed: true,
    });
    expect(fromExisting({ kind: "mismatch", fields: ["amount"] })).toEqual({ kind: "mismatch", fields: ["amount"] });
    expect(fromExisting({ kind: "in_progress", retryAfterS: 1 })).toEqual({ kind: "in_progress", retryAfterS: 1 });
  });
});
