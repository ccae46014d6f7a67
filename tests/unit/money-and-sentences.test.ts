/**
 * Money for people (lib/money.ts) and the one map from outcomes to sentences (lib/web/outcome-sentences.ts):
 * amounts are exact for every safe integer and follow the currency's decimals; a typed amount parses to the same
 * minor units the pattern of the input accepts; every problem code has a sentence without the API's jargon, and
 * a failed or refused operation never reads as if money moved.
 */
import { describe, expect, it } from "vitest";
import { currencyDecimals, formatMoney, moneyInputPattern, parseMoneyInput } from "../../lib/money";
import { PROBLEM_CODES, problem } from "../../lib/problems";
import { describeOutcome, PROBLEM_SENTENCES, type SentenceContext } from "../../lib/web/outcome-sentences";

const USD: SentenceContext = { kind: "topup", currency: "USD", maxAmountMinor: 1_000_000 };

describe("formatMoney", () => {
  it("writes the currency's symbol, grouping and decimals", () => {
    expect(formatMoney(2500, "USD")).toBe("$25.00");
    expect(formatMoney(5, "USD")).toBe("$0.05");
    expect(formatMoney(1_234_567, "USD")).toBe("$12,345.67");
    expect(formatMoney(500, "JPY")).toBe("¥500");
    expect(formatMoney(1234, "KWD")).toBe("KWD\u00a01.234");
    expect(formatMoney(-2505, "EUR")).toBe("-€25.05");
  });

  it("is exact for the largest safe integer (no rounding through a binary fraction)", () => {
    expect(formatMoney(Number.MAX_SAFE_INTEGER, "USD")).toBe("$90,071,992,547,409.91");
    // The same amount through a float division would print ...409.90 or ...409.92.
    expect(formatMoney(Number.MAX_SAFE_INTEGER - 1, "USD")).toBe("$90,071,992,547,409.90");
  });

  it("signs credits and debits when asked", () => {
    expect(formatMoney(2500, "USD", { sign: "always" })).toBe("+$25.00");
    expect(formatMoney(-2500, "USD", { sign: "always" })).toBe("-$25.00");
  });

  it("writes an unusable currency code after the plain amount instead of throwing", () => {
    expect(formatMoney(2500, "??")).toBe("25.00 ??");
  });

  it("refuses an amount that is not a safe integer", () => {
    expect(() => formatMoney(1.5, "USD")).toThrow(RangeError);
  });

  it("knows each currency's decimals", () => {
    expect([currencyDecimals("USD"), currencyDecimals("JPY"), currencyDecimals("KWD")]).toEqual([2, 0, 3]);
  });
});

describe("parseMoneyInput and moneyInputPattern", () => {
  const accepted: [string, string, number][] = [
    ["25", "USD", 2500],
    ["25.5", "USD", 2550],
    ["25.50", "USD", 2550],
    [" 1,250.00 ", "USD", 125_000],
    ["0.01", "USD", 1],
    ["500", "JPY", 500],
    ["1,500", "JPY", 1500],
  ];
  it.each(accepted)("%j in %s is %d minor units, and the input's pattern accepts it", (text, currency, minor) => {
    expect(parseMoneyInput(text, currency)).toBe(minor);
    expect(new RegExp(`^${moneyInputPattern(currency)}$`, "v").test(text.trim())).toBe(true);
  });

  const refused: [string, string][] = [
    ["", "USD"],
    ["0", "USD"],
    ["0.00", "USD"],
    ["-5", "USD"],
    ["25.555", "USD"],
    ["1e3", "USD"],
    ["12,34", "USD"],
    ["abc", "USD"],
    ["25.5", "JPY"],
    ["99999999999999", "USD"],
  ];
  it.each(refused)("%j in %s is refused, by the parser and the input's pattern alike", (text, currency) => {
    expect(parseMoneyInput(text, currency)).toBeNull();
    if (text !== "0" && text !== "0.00") {
      expect(new RegExp(`^${moneyInputPattern(currency)}$`, "v").test(text)).toBe(false);
    }
  });
});

describe("outcome sentences", () => {
  const JARGON = /\b(JSON|minor units?|keys?|parameters?|idempotenc\w*)\b/i;

  it("every problem code has a sentence for people, free of the API's jargon", () => {
    for (const code of Object.keys(PROBLEM_CODES) as (keyof typeof PROBLEM_CODES)[]) {
      for (const kind of ["topup", "payment", "reward", "payout"] as const) {
        const text = PROBLEM_SENTENCES[code]({ ...USD, kind, amountMinor: 2500, rewardCapMinor: 50 });
        expect(text, code).not.toMatch(JARGON);
        expect(text.length, code).toBeGreaterThan(10);
      }
    }
  });

  it("prints the sentence, never the problem's detail", () => {
    const body = JSON.stringify(
      problem("idempotency_key_reused", "This key was first used with other parameters: amount."),
    );
    const sentence = describeOutcome({ status: 409, body, replayed: false }, USD);
    expect(sentence.tone).toBe("error");
    expect(sentence.text).not.toMatch(JARGON);
    expect(sentence.text).toContain("different amount");
  });

  it("a stale tab's reused form says what differed, that nothing was charged, and that pressing again works (decision 055)", () => {
    const reused = (fields: string[], kind: "payment" | "topup" | "refund") =>
      describeOutcome(
        {
          status: 422,
          body: JSON.stringify(problem("idempotency_key_reused", "other parameters", { fields })),
          replayed: false,
        },
        { ...USD, kind, amountMinor: 1000 },
      ).text;
    expect(reused(["amount"], "payment")).toBe(
      "This form had already been used, in another tab or window, for a payment with a different amount, so this payment of $10.00 was not made and nothing of it was charged. The form is ready for a new one: press Pay again to make it.",
    );
    expect(reused(["note", "payee"], "payment")).toContain("for a payment with a different note and payee,");
    expect(reused(["amount", "note", "payee"], "payment")).toContain("different amount, note and payee,");
    expect(reused(["amount"], "topup")).toContain("press Top up again");
    expect(reused(["amount"], "topup")).not.toMatch(/reload/i);
    // A refund's id is the admin's own: no button to press again, only what happened.
    expect(reused(["amount"], "refund")).toBe(
      "This form had already been used, in another tab or window, for a refund with a different amount, so this refund of $10.00 was not made; nothing was refunded.",
    );
    for (const fields of [["amount"], ["payee"], ["note"]]) expect(reused(fields, "payment")).not.toMatch(JARGON);
  });

  it("a payee or note refused by the form gets its own sentence", () => {
    for (const field of ["payee", "note"] as const) {
      const body = JSON.stringify(problem("invalid_request", `${field}: too long`, { field }));
      const sentence = describeOutcome({ status: 400, body, replayed: false }, { ...USD, kind: "payment" });
      expect(sentence.text).toMatch(field === "payee" ? /^Say who you are paying/ : /^A note is optional/);
      expect(sentence.text).toContain("Nothing was paid.");
    }
  });

  it("an amount refused by the form gets the amount hint in the wallet's currency", () => {
    const body = JSON.stringify(
      problem("invalid_request", "amount: must be a JSON integer from 1 to 1000000 (minor units)", { field: "amount" }),
    );
    const sentence = describeOutcome({ status: 400, body, replayed: false }, USD);
    expect(sentence.text).toBe("Enter an amount from $0.01 to $10,000.00, such as 12.50.");
  });

  it("a refused payment says nothing was paid; a failed top-up says nothing was charged", () => {
    const refused = describeOutcome(
      { status: 402, body: JSON.stringify(problem("insufficient_funds", "balance too low")), replayed: false },
      { ...USD, kind: "payment", amountMinor: 999_900 },
    );
    expect(refused).toEqual({
      tone: "error",
      text: "Not enough money in your wallet for this payment of $9,999.00. Nothing was paid.",
    });
    const topup = { refId: "r", amount: 2500, currency: "USD", status: "processing", failureReason: null };
    const failed = describeOutcome({ status: 201, body: JSON.stringify({ topup }), replayed: false }, USD, {
      status: "failed",
      failureReason: "declined_by_bank",
    });
    expect(failed).toEqual({
      tone: "error",
      text: "Top-up of $25.00 failed: the bank declined the payment. Nothing was charged.",
    });
  });

  it("a refused refund says nothing was refunded, not charged; a refund of a disputed top-up says why", () => {
    const refund = { ...USD, kind: "refund" as const, amountMinor: 500 };
    for (const code of ["invalid_request", "forbidden", "unauthenticated"] as const) {
      const body = JSON.stringify(problem(code, "x"));
      const text = describeOutcome({ status: problem(code, "x").status, body, replayed: false }, refund).text;
      expect(text, code).toContain("nothing was refunded");
      expect(text, code).not.toContain("charged");
    }
    const disputed = JSON.stringify(problem("topup_disputed", "x", { refundableMinor: 0 }));
    expect(describeOutcome({ status: 422, body: disputed, replayed: false }, refund).text).toContain(
      "The bank holds a dispute on this top-up",
    );
  });

  it("a transfer's answer names the recipient and the amount; every refusal says nothing was sent (section 15)", () => {
    const context: SentenceContext = { ...USD, kind: "transfer", amountMinor: 750 };
    const transfer = { refId: "web:x", to: "bo@example.com", amount: 750, currency: "USD", status: "succeeded" };
    const sent = describeOutcome({ status: 201, body: JSON.stringify({ transfer }), replayed: false }, context);
    expect(sent).toEqual({ tone: "success", text: "Sent $7.50 to bo@example.com. It is in their wallet now." });
    const again = describeOutcome({ status: 201, body: JSON.stringify({ transfer }), replayed: true }, context);
    expect(again.text).toContain("it was not done twice");
    const refusals = [
      "invalid_request",
      "unauthenticated",
      "forbidden",
      "insufficient_funds",
      "debt_outstanding",
      "recipient_unknown",
      "transfer_to_self",
      "recipient_cannot_receive",
      "rate_limited",
      "idempotency_key_reused",
      "payload_too_large",
    ] as const;
    for (const code of refusals) {
      const body = JSON.stringify(problem(code, "x"));
      const sentence = describeOutcome({ status: problem(code, "x").status, body, replayed: false }, context);
      expect(sentence.tone, code).toBe("error");
      expect(sentence.text, code).toMatch(/nothing (of it )?was sent/i);
      expect(sentence.text, code).not.toMatch(/charged|paid/);
      expect(sentence.text, code).not.toMatch(JARGON);
    }
    for (const field of ["to", "note"] as const) {
      const body = JSON.stringify(problem("invalid_request", `${field}: invalid`, { field }));
      const sentence = describeOutcome({ status: 400, body, replayed: false }, context);
      expect(sentence.text, field).toMatch(field === "to" ? /^Enter the email address/ : /^A note is optional/);
      expect(sentence.text, field).toContain("Nothing was sent.");
    }
  });

  it("a top-up's answer follows its live state: processing, then succeeded", () => {
    const topup = { refId: "r", amount: 2500, currency: "USD", status: "processing", failureReason: null };
    const outcome = { status: 201, body: JSON.stringify({ topup }), replayed: false };
    expect(describeOutcome(outcome, USD).text).toBe("Top-up of $25.00: processing, waiting for the bank.");
    expect(describeOutcome(outcome, USD, { status: "succeeded", failureReason: null })).toEqual({
      tone: "success",
      text: "Top-up of $25.00 succeeded: $25.00 was added to your wallet.",
    });
  });

  it("C21: a reward's replay says it was already credited today", () => {
    const reward = { adId: "ad-a", amount: 5, currency: "USD", status: "succeeded" };
    const context: SentenceContext = { ...USD, kind: "reward", adName: "ad A" };
    const first = describeOutcome({ status: 201, body: JSON.stringify({ reward }), replayed: false }, context);
    const again = describeOutcome({ status: 201, body: JSON.stringify({ reward }), replayed: true }, context);
    expect(first.text).toBe("+$0.05 credited for ad A.");
    expect(again.text).toBe("Already credited today (+$0.05): nothing more for this ad until tomorrow.");
  });
  it("a withdrawal's answer says withdrawal, follows its live state and never shows the whole account number", () => {
    const payout = {
      refId: "web:r",
      destination: "4000000002",
      amount: 1200,
      currency: "USD",
      status: "processing",
      failureReason: null,
    };
    const outcome = { status: 201, body: JSON.stringify({ payout }), replayed: false };
    const context: SentenceContext = { ...USD, kind: "payout", amountMinor: 1200 };
    expect(describeOutcome(outcome, context)).toEqual({
      tone: "info",
      text: "Withdrawal of $12.00 to the account ending 0002: processing, waiting for the bank. The money is held from your balance until the bank pays it.",
    });
    expect(describeOutcome(outcome, context, { status: "succeeded", failureReason: null })).toEqual({
      tone: "success",
      text: "Paid: $12.00 was sent to the account ending 0002.",
    });
    expect(describeOutcome(outcome, context, { status: "failed", failureReason: "declined_by_bank" })).toEqual({
      tone: "error",
      text: "Withdrawal of $12.00 failed: the bank did not pay it out. The money is back in your balance.",
    });
    // A row refused at its claim held nothing: it never says the money is "back".
    expect(describeOutcome(outcome, context, { status: "failed", failureReason: "payout_limit_exceeded" })).toEqual({
      tone: "error",
      text: "Withdrawal of $12.00 was not made: it would take today's withdrawals over their daily limit. Nothing was withdrawn.",
    });
    for (const live of [undefined, { status: "succeeded", failureReason: null }] as const)
      expect(describeOutcome(outcome, context, live).text).not.toContain("4000000002");
  });

  it("a refused withdrawal says nothing was withdrawn, for every refusal it can meet", () => {
    const context: SentenceContext = { ...USD, kind: "payout", amountMinor: 10000 };
    const refused = (status: number, code: keyof typeof PROBLEM_CODES, extensions = {}) =>
      describeOutcome({ status, body: JSON.stringify(problem(code, "detail", extensions)), replayed: false }, context);
    expect(refused(402, "insufficient_funds").text).toBe(
      "Not enough money in your wallet for this withdrawal of $100.00. Nothing was withdrawn.",
    );
    expect(refused(402, "debt_outstanding").text).toContain("Nothing was withdrawn");
    expect(refused(422, "payout_limit_exceeded").text).toContain("nothing was withdrawn");
    expect(refused(422, "idempotency_key_reused", { fields: ["destination"] }).text).toContain(
      "nothing of it was withdrawn. The form is ready for a new one: press Withdraw again",
    );
    expect(refused(400, "invalid_request", { field: "destination" }).text).toBe(
      "That account number is not valid: it has 10 digits, such as 4000000002, the last digit a check digit. Check it on your bank statement; nothing was withdrawn.",
    );
    expect(refused(429, "rate_limited").text).toContain("withdrawals");
    for (const code of ["insufficient_funds", "debt_outstanding", "payout_limit_exceeded", "invalid_request"] as const)
      expect(refused(400, code).text).not.toMatch(/\bcharged\b|\bpaid\b/i);
  });
});
