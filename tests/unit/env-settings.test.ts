/**
 * C28: settings are validated together at start (lib/env.ts): a ceiling and an amount that would let a credit never
 * refused for the ceiling (an adjustment over a full wallet) reach the balance's CHECK (< 2^53) are refused, naming
 * both variables, so no amount the settings allow can make the database refuse a settlement again and again.
 * tests/integration/give-backs.test.ts shows the database refusing exactly such a credit at the edge.
 */
import { describe, expect, it } from "vitest";
import { EnvError, parseEnv } from "../../lib/env";

/** The message of the error parseEnv throws for `source`, or null when it accepts it. */
function refusal(source: Record<string, string>): string | null {
  try {
    parseEnv(source);
    return null;
  } catch (error) {
    if (!(error instanceof EnvError)) throw error;
    return error.message;
  }
}

describe("C28: the ceiling leaves room under the balance's CHECK for every amount", () => {
  it("C28: a ceiling of 2^52 with amounts of 2^52 is refused at start, naming both settings", () => {
    const message = refusal({ MAX_BALANCE_MINOR: String(2 ** 52), MAX_AMOUNT_MINOR: String(2 ** 52) });
    expect(message).toContain("MAX_BALANCE_MINOR");
    expect(message).toContain("MAX_AMOUNT_MINOR");
  });

  it("C28: the largest pair that fits (sum 2^53 - 1) is accepted; one more minor unit is not", () => {
    expect(refusal({ MAX_BALANCE_MINOR: String(2 ** 52), MAX_AMOUNT_MINOR: String(2 ** 52 - 1) })).toBeNull();
    expect(refusal({ MAX_BALANCE_MINOR: String(2 ** 52 - 1), MAX_AMOUNT_MINOR: String(2 ** 52) })).toBeNull();
    expect(refusal({ MAX_BALANCE_MINOR: String(2 ** 52), MAX_AMOUNT_MINOR: String(2 ** 52) })).not.toBeNull();
  });

  it("the defaults fit", () => {
    expect(refusal({})).toBeNull();
  });
});
