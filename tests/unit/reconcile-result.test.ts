/**
 * A reconciler pass's result, derived from what the pass noted (lib/reconciler/reconcile-result.ts `tallyPass`):
 * the contract's five counts for a quiet pass (contract section 4), the optional parts only when there is something
 * in them, the anomalies in the order found and capped, and the bank's report from its unknown outcomes.
 */
import { describe, expect, it } from "vitest";
import {
  RECONCILE_ANOMALIES_MAX,
  tallyPass,
  type PassOutcome,
  type ReconcileAnomaly,
} from "../../lib/reconciler/reconcile-result";

const anomaly = (detail: string): ReconcileAnomaly => ({
  kind: "bank_refused",
  merchantRef: null,
  chargeId: null,
  detail,
});

describe("tallyPass", () => {
  it("a quiet pass is exactly the contract's five counts, in the contract's order", () => {
    expect(JSON.stringify(tallyPass([]))).toBe('{"examined":0,"completed":0,"failed":0,"redriven":0,"skipped":0}');
  });

  it("counts each outcome: examined, completed, failed, redriven; a row left is skipped, a failed work is errored", () => {
    const outcomes: PassOutcome[] = [
      { kind: "examined" },
      { kind: "examined" },
      { kind: "completed" },
      { kind: "failed" },
      { kind: "redriven" },
      { kind: "left" },
      { kind: "left", anomaly: anomaly("a") },
      { kind: "reported", anomaly: anomaly("b") },
      { kind: "errored", anomaly: anomaly("c") },
    ];
    expect(tallyPass(outcomes)).toEqual({
      examined: 2,
      completed: 1,
      failed: 1,
      redriven: 1,
      skipped: 2,
      anomalies: [anomaly("a"), anomaly("b"), anomaly("c")],
      errored: 1,
    });
  });

  it("lists the anomalies in the order found, the first RECONCILE_ANOMALIES_MAX (100) only", () => {
    const outcomes: PassOutcome[] = Array.from({ length: 150 }, (_, i) => ({ kind: "left", anomaly: anomaly(`${i}`) }));
    const result = tallyPass(outcomes);
    expect(RECONCILE_ANOMALIES_MAX).toBe(100);
    expect(result.skipped).toBe(150);
    expect(result.anomalies?.map((a) => a.detail)).toEqual(Array.from({ length: 100 }, (_, i) => `${i}`));
  });

  it("the bank's report: the first unknown outcome's reason, every row left, and whether the charges were listed", () => {
    const result = tallyPass([
      { kind: "bank_unknown", outcome: { kind: "unknown", reason: "timeout", detail: "after 2000 ms" }, rowsLeft: 1 },
      { kind: "bank_unknown", outcome: { kind: "unknown", reason: "network" }, rowsLeft: 1 },
      { kind: "charges_unlisted" },
      { kind: "rows_left", rowsLeft: 5 },
    ]);
    expect(result.bankUnreachable).toEqual({ reason: "timeout: after 2000 ms", rowsLeft: 7, chargesUnlisted: true });
    expect(
      tallyPass([{ kind: "bank_unknown", outcome: { kind: "unknown", reason: "network" }, rowsLeft: 0 }]),
    ).toMatchObject({ bankUnreachable: { reason: "network", rowsLeft: 0, chargesUnlisted: false } });
    // A refused listing (no unknown outcome) leaves the charges unlisted for a reason of its own.
    expect(tallyPass([{ kind: "charges_unlisted" }]).bankUnreachable).toEqual({
      reason: "charge list unreadable",
      rowsLeft: 0,
      chargesUnlisted: true,
    });
    expect(tallyPass([{ kind: "rows_left", rowsLeft: 3 }])).not.toHaveProperty("bankUnreachable");
  });

  it("a pass the database stopped names its step and reason, after what it did until then", () => {
    const result = tallyPass([
      { kind: "examined" },
      { kind: "completed" },
      {
        kind: "database_unreachable",
        step: "bank_to_ledger",
        reason: "connection to the database lost (ECONNREFUSED)",
      },
    ]);
    expect(JSON.stringify(result)).toBe(
      '{"examined":1,"completed":1,"failed":0,"redriven":0,"skipped":0,' +
        '"databaseUnreachable":{"step":"bank_to_ledger","reason":"connection to the database lost (ECONNREFUSED)"}}',
    );
  });
});
