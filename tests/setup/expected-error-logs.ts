/**
 * The reviewed allow-list of tests/setup/error-logs.ts: errors that tests provoke on purpose. Each entry names the
 * test (a pattern over its full name, "describe > it"), the logged message it expects, and why the error is the
 * behaviour under test. Keep it short: an entry must never hide an error a test did not mean to cause.
 */
export interface ExpectedErrorLog {
  /** Matches the test's full name, as vitest reports it (`describe > it`). */
  readonly test: RegExp;
  /** Matches the logged message (`msg`, then the error's message). */
  readonly message: RegExp;
  /** Why this test makes the process log this error. */
  readonly why: string;
}

export const EXPECTED_ERROR_LOGS: readonly ExpectedErrorLog[] = [
  {
    test: /^settleTopup: a settlement that keeps failing > /,
    message: /^top-up settlement keeps failing: flagged for attention\b/,
    why: "the test makes the credit fail (a wallet at its CHECK ceiling) until the row is flagged, contract section 5",
  },
  {
    test: /^7\.6: a succeeded charge left uncredited is reported whatever its lease > /,
    message: /^top-up settlement keeps failing: flagged for attention\b/,
    why: "the test makes the credit fail (a wallet at its CHECK ceiling) until the row is flagged, so the audit's 7.6 can be shown to report it",
  },
  {
    test: /^C28: a give-back the database keeps refusing is counted, flagged, listed and audited > C28: a failed refund whose release /,
    message: /^refund settlement keeps failing: flagged for attention\b/,
    why: "the test makes the refund's give-back fail (a trigger raising the balance CHECK's error) until the row is flagged, case C28",
  },
  {
    test: /^C29: one poisoned row does not stop the reconciler's pass > C29: after a poisoned row the dispute step still runs; /,
    message: /^top-up settlement keeps failing: flagged for attention\b/,
    why: "the test poisons one row (a trigger raising XX001) for SETTLE_ATTEMPTS_MAX passes to show it is flagged, contract section 5",
  },
  {
    test: /^C29: the database lost in the middle of a pass > C29: the pass stops and still reports/,
    message: /^reconciler pass stopped: the database cannot be reached\b/,
    why: "the test takes the database away mid-pass (a proxy refusing every connection) to show the pass reports what it did",
  },
  {
    test: /^C29 negative control: the reconciler without its row isolation > without the isolation the admin endpoint fails them: 500$/,
    message: /^unhandled error: c29 test: ledger entry \d+ of topup is poisoned$/,
    why: "the negative control removes the row isolation on purpose: the poisoned row aborts the pass and the route answers 500, as before case C29",
  },
  {
    test: /^error logs > an error the allow-list names is recorded and allowed/,
    message: /^deliberate error for the error-log guard$/,
    why: "tests/unit/error-log-guard.test.ts checks that the guard sees and judges errors",
  },
];
