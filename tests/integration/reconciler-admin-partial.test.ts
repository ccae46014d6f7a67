/**
 * Case C29 at the admin door: the real `POST /api/v1/admin/reconcile` handler (route file, route wrapper, an admin's
 * bearer token), run in process against a real PostgreSQL and sandbox bank, answers 200 with partial results when
 * one of the user's rows is poisoned (a trigger raising XX001 on its settlement): the other rows are completed, the
 * poisoned one is counted in `errored` and named in a `row_error` anomaly, and the body is the OpenAPI document's
 * `ReconcileResult`. Its negative control (the row isolation removed: 500) is in
 * tests/integration/reconciler-poisoned-row-control.test.ts.
 */
import { afterAll, beforeAll, describe, it } from "vitest";
import { adminReconcileWithPoisonedRow, assertAdminPartialResults } from "./poisoned-row-fixtures";
import { startTestBank, type TestBank } from "./reconciler-fixtures";

let bank: TestBank;

beforeAll(async () => {
  bank = await startTestBank();
  // The route's pass asks the bank at BANK_URL (lib/env.ts reads it on first use, after this line).
  process.env.BANK_URL = bank.url;
}, 60_000);

afterAll(async () => {
  await bank?.stop();
});

describe("C29: POST /api/v1/admin/reconcile with a poisoned row", () => {
  it("C29: answers 200 with partial results (the other rows completed, the poisoned one counted and named), never 500", async () => {
    assertAdminPartialResults(await adminReconcileWithPoisonedRow(bank.url));
  });
});
