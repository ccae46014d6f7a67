/**
 * Readable references (docs/decisions/055): a bijection between entry ids and `XX-XXXX-XXXX` texts, read back as a
 * person types them.
 */
import { describe, expect, it } from "vitest";
import { LEDGER_TYPES } from "../../lib/ledger/keys";
import {
  parseReadableReference,
  READABLE_REFERENCE_PATTERN,
  readableReference,
  REFERENCE_PREFIXES,
} from "../../lib/wallet/readable-reference";

describe("readable references", () => {
  it("are the kind's two letters and eight characters, and read back to the same entry and kind", () => {
    for (const type of LEDGER_TYPES) {
      const reference = readableReference(type, 42);
      expect(reference).toMatch(READABLE_REFERENCE_PATTERN);
      expect(reference.startsWith(`${REFERENCE_PREFIXES[type]}-`)).toBe(true);
      expect(parseReadableReference(reference)).toEqual({ id: 42, type });
    }
    // Each kind has its own prefix.
    expect(new Set(Object.values(REFERENCE_PREFIXES)).size).toBe(LEDGER_TYPES.length);
  });

  it("never give two ids the same text, and consecutive ids do not read as a counter", () => {
    // Collected, then asserted once: 60,000 expect() calls took seconds on a loaded machine.
    const seen = new Set<string>();
    const wrong: string[] = [];
    for (let id = 1; id <= 20_000; id++) {
      const reference = readableReference("payment", id);
      if (seen.has(reference)) wrong.push(`${id}: ${reference} given twice`);
      seen.add(reference);
      if (parseReadableReference(reference)?.id !== id) wrong.push(`${id}: ${reference} reads back wrong`);
    }
    expect(wrong).toEqual([]);
    expect(seen.size).toBe(20_000);
    const [a, b] = [readableReference("topup", 1000), readableReference("topup", 1001)];
    // More than the last character differs between neighbours.
    expect(a.slice(0, -1)).not.toBe(b.slice(0, -1));
  });

  it("stay total past 40 bits, up to the largest safe id", () => {
    for (const id of [2 ** 40 - 1, 2 ** 40, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER]) {
      const reference = readableReference("refund", id);
      expect(parseReadableReference(reference)).toEqual({ id, type: "refund" });
    }
    expect(readableReference("refund", 2 ** 40 - 1)).toMatch(READABLE_REFERENCE_PATTERN);
    expect(readableReference("refund", 2 ** 40)).not.toMatch(READABLE_REFERENCE_PATTERN);
  });

  it("are read as people type them: any case, spaces or no dashes, no prefix, look-alike letters", () => {
    const reference = readableReference("payment", 1234);
    const digits = reference.slice(3).replace("-", "");
    expect(parseReadableReference(reference.toLowerCase())).toEqual({ id: 1234, type: "payment" });
    expect(parseReadableReference(reference.replace(/-/g, " "))).toEqual({ id: 1234, type: "payment" });
    expect(parseReadableReference(digits)).toEqual({ id: 1234, type: null });
    const lookalikes = digits.replace(/0/g, "o").replace(/1/g, "l");
    expect(parseReadableReference(lookalikes)).toEqual({ id: 1234, type: null });
  });

  it("refuse what is not one, without throwing", () => {
    for (const text of ["", "PY-", "PY-1234", "hello", "PY-UUUU-UUUU", "x".repeat(41), "PY-0000-0000", "web:3ce9"]) {
      const parsed = parseReadableReference(text);
      if (text === "PY-0000-0000") {
        // Zero is no entry id (ids start at 1); the permutation maps it to another text.
        expect(parsed === null || parsed.id > 0).toBe(true);
      } else {
        expect(parsed, text).toBeNull();
      }
    }
    expect(() => readableReference("topup", 0)).toThrow(RangeError);
    expect(() => readableReference("topup", 1.5)).toThrow(RangeError);
    expect(() => readableReference("topup", Number.MAX_SAFE_INTEGER + 1)).toThrow(RangeError);
  });
});
