/**
 * Negative controls of case C29, kept runnable: the scenarios of tests/integration/reconciler-poisoned-row.test.ts and
 * tests/integration/reconciler-admin-partial.test.ts (tests/integration/poisoned-row-fixtures.ts) run through the real
 * reconciler, and through it with one guard removed. The scenario's assertions pass for the first and fail for the
 * second, which is the evidence that the C29 tests bite. The guards are switched off through vi.mock of
 * lib/reconciler/row-guard.ts, nothing else changed:
 * - row isolation: `judgeRowError` rethrows what the guard before C29 rethrew (an unexpected SQLSTATE, a retryable
 *   or lost-connection error), so one poisoned row aborts the pass, and the admin endpoint answers 500;
 * - the row's own statement timeout: `rowStatementTimeoutMs` gives null, so a row behind a locked wallet waits the
 *   session's DB_STATEMENT_TIMEOUT_MS (15 s) instead of 2 s, and the pass does not finish while the lock is held.
 * And the dispute step's per-dispute guard, through a copy of lib/chargebacks/reconcile-disputes.ts
 * `reconcileDisputes` without it ({@link reconcileDisputesWithoutGuard}): one refused chargeback stops the step.
 * Run alone: `npx vitest run --project integration tests/integration/reconciler-poisoned-row-control.test.ts`.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

const control = vi.hoisted(() => ({ isolationRemoved: false, rowBoundRemoved: false }));

vi.mock("../../lib/reconciler/row-guard", async (importOriginal) => {
  const actual = await importOriginal<typeof import("../../lib/reconciler/row-guard")>();
  const { classifyDbError } = await import("../../lib/ledger/db-errors");
  return {
    ...actual,
    judgeRowError: async (error: unknown) => {
      const kind = classifyDbError(error).kind;
      if (control.isolationRemoved && (kind === "unknown" || kind === "retryable" || kind === "connection_lost"))
        throw error;
      return actual.judgeRowError(error);
    },
    rowStatementTimeoutMs: () => (control.rowBoundRemoved ? null : actual.rowStatementTimeoutMs()),
  };
});

import { listDisputesSince } from "@/lib/bank/disputes";
import { parseMerchantRef } from "@/lib/bank/merchant-ref";
import { applyBankDispute } from "@/lib/chargebacks/apply-dispute";
import { reconcileDisputes, type DisputePassResult } from "@/lib/chargebacks/reconcile-disputes";
import {
  adminReconcileWithPoisonedRow,
  assertAdminPartialResults,
  assertDisputeIsolated,
  assertOthersFinished,
  assertRowWaitBounded,
  disputeStepWithPoisonedChargeback,
  passBehindLockedWallet,
  passWithPoisonedRow,
  type DisputeStep,
} from "./poisoned-row-fixtures";
import { startTestBank, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank();
  // The admin route's pass asks the bank at BANK_URL (lib/env.ts reads it on first use, after this line).
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

/** Runs `work` with one guard switched off, and switches it back on whatever happens. */
async function without<T>(guard: "isolationRemoved" | "rowBoundRemoved", work: () => Promise<T>): Promise<T> {
  control[guard] = true;
  try {
    return await work();
  } finally {
    control[guard] = false;
  }
}

describe("C29 negative control: the reconciler without its row isolation", () => {
  it("the real pass passes the C29 assertions (a poisoned row among three)", async () => {
    assertOthersFinished(await passWithPoisonedRow(bank.url));
  });

  it("without the isolation it fails them: the pass throws at the poisoned row and credits none of the others", async () => {
    const outcome = await without("isolationRemoved", () => passWithPoisonedRow(bank.url));
    expect(() => assertOthersFinished(outcome)).toThrow();
    expect(outcome.result).toBeNull();
    expect(outcome.othersCredited).toBe(0);
  });

  it("the real admin endpoint passes the C29 assertions (200, partial results)", async () => {
    assertAdminPartialResults(await adminReconcileWithPoisonedRow(bank.url));
  });

  it("without the isolation the admin endpoint fails them: 500", async () => {
    const outcome = await without("isolationRemoved", () => adminReconcileWithPoisonedRow(bank.url));
    expect(() => assertAdminPartialResults(outcome)).toThrow();
    expect(outcome.status).toBe(500);
  });
});

describe("C29 negative control: the reconciler without the row's own statement timeout", () => {
  it("the real pass passes the C29 assertions (one user's wallet locked)", async () => {
    assertRowWaitBounded(await passBehindLockedWallet(bank.url));
  });

  it("without the row's timeout it fails them: the pass is still waiting on the locked wallet at the deadline", async () => {
    const outcome = await without("rowBoundRemoved", () => passBehindLockedWallet(bank.url));
    expect(() => assertRowWaitBounded(outcome)).toThrow();
    expect(outcome.finishedAfterMs).toBeNull();
  });
});

/**
 * `reconcileDisputes` without its per-dispute guard: the bank's disputes since the look-back (one page; the scenario
 * has two), each in-scope one applied through the same function, and whatever one throws ends the step.
 */
const reconcileDisputesWithoutGuard: DisputeStep = async (options) => {
  const result: DisputePassResult = {
    listed: 0,
    landed: 0,
    anomalies: 0,
    bankUnreachable: null,
    retried: 0,
    errors: [],
  };
  const since = new Date(Date.now() - options.lookBackMs).toISOString();
  const listed = await listDisputesSince(since, { ...options.bank, limit: 1000 });
  if (listed.kind !== "page") throw new Error(`the bank did not list disputes: ${JSON.stringify(listed)}`);
  for (const dispute of listed.disputes) {
    const userId = parseMerchantRef(dispute.merchantRef)?.userId;
    if (options.userIds && (userId === undefined || !options.userIds.includes(userId))) continue;
    result.listed += 1;
    const applied = await applyBankDispute(dispute, { actor: "reconciler", detail: "control: no guard" });
    if (applied.kind === "applied") result.landed += applied.entries.filter((e) => e.result === "landed").length;
  }
  return result;
};

describe("C29 negative control: the dispute step without its per-dispute guard", () => {
  it("the real dispute step passes the C29 assertions (a refused chargeback, then one that lands)", async () => {
    assertDisputeIsolated(await disputeStepWithPoisonedChargeback(bank.url, reconcileDisputes));
  });

  it("without the guard it fails them: the refused chargeback ends the step, and the next dispute never lands", async () => {
    const outcome = await disputeStepWithPoisonedChargeback(bank.url, reconcileDisputesWithoutGuard);
    expect(() => assertDisputeIsolated(outcome)).toThrow();
    expect(outcome.thrown).not.toBeNull();
    expect(outcome.otherLedger.entries).toHaveLength(0);
  });
});
