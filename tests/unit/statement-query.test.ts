/**
 * The statement's inputs and text (contract section 13.4), pure: `?at=` bounded (format, six decimals, 1970, five
 * minutes ahead), the statement's range (both days, in order, at most 366 days), the microsecond time text, and the
 * CSV cells (quoted, neutralised, numbers bare).
 */
import { describe, expect, it } from "vitest";
import {
  AT_FUTURE_SKEW_S,
  parseQuery,
  statementCsvQuerySchema,
  statementQuerySchema,
  walletQuerySchema,
} from "@/lib/http/list-query";
import { csvRecord, neutraliseFormula } from "@/lib/wallet/csv-cells";
import { isoMicros, microsOf } from "@/lib/wallet/statement-posting";

const atOk = (at: string) => walletQuerySchema.safeParse({ at }).success;

describe("GET /api/v1/wallet?at=", () => {
  it("takes ISO-8601 instants with Z or an offset and up to six decimals", () => {
    for (const at of ["2026-12-01T00:00:00Z", "2026-12-01T00:00:00.123456Z", "2026-12-01T01:00:00.5+02:00"]) {
      expect([at, atOk(at)]).toEqual([at, true]);
    }
  });

  it("refuses text that is no instant, a seventh decimal, no offset, before 1970 or past the skew", () => {
    const ahead = new Date(Date.now() + (AT_FUTURE_SKEW_S + 60) * 1000).toISOString();
    const within = new Date(Date.now() + (AT_FUTURE_SKEW_S - 60) * 1000).toISOString();
    for (const at of [
      "",
      "now",
      "2026-12-01",
      "2026-12-01T00:00:00",
      "2026-02-30T00:00:00Z",
      "2026-12-01T00:00:00.1234567Z",
      "1969-12-31T23:59:59Z",
      ahead,
      `2026-12-01T00:00:00Z${" ".repeat(40)}`,
    ]) {
      expect([at, atOk(at)]).toEqual([at, false]);
    }
    expect(atOk(within)).toBe(true);
  });
});

describe("the statement's range", () => {
  const parsed = (query: string) => parseQuery(statementQuerySchema, new URLSearchParams(query)).ok;
  it("needs both days, in order, at most 366 days including both", () => {
    expect(parsed("from=2026-01-01&to=2026-12-31")).toBe(true);
    expect(parsed("from=2024-01-01&to=2024-12-31")).toBe(true);
    expect(parsed("from=2024-01-01&to=2025-01-01")).toBe(false);
    expect(parsed("from=2026-12-02&to=2026-12-01")).toBe(false);
    expect(parsed("from=2026-12-01")).toBe(false);
    expect(parsed("from=2026-12-01&to=2026-12-01&limit=101")).toBe(false);
    expect(parseQuery(statementCsvQuerySchema, new URLSearchParams("from=2026-12-01&to=2026-12-01")).ok).toBe(true);
  });
});

describe("the statement's text", () => {
  it("writes and reads times with microseconds, before and after the epoch", () => {
    for (const us of [0n, 1n, 999n, 1_764_662_400_123_456n, -1n]) {
      expect(microsOf(isoMicros(us))).toBe(us);
    }
    expect(isoMicros(1_764_662_400_123_456n)).toBe("2025-12-02T08:00:00.123456Z");
  });

  it("quotes every text cell, neutralises formula leads and writes numbers bare", () => {
    expect(csvRecord(["a", 'b"c', "=1+1", "-x", "+x", "@x", "\tx", "\rx", { decimal: "-12.50" }])).toBe(
      `"a","b""c","'=1+1","'-x","'+x","'@x","'\tx","'\rx",-12.50\r\n`,
    );
    expect(neutraliseFormula("Café")).toBe("Café");
    expect(() => csvRecord([{ decimal: "1,5" }])).toThrow(TypeError);
  });
});
