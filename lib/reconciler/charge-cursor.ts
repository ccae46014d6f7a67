/**
 * Where the reconciler's bank-to-ledger direction resumes reading the bank's charge list
 * (`GET /charges?since=`), kept in this process's memory, one cursor per bank URL.
 *
 * There is no table for it (the schema has none, and a cursor is an optimisation, not a guarantee): a new process
 * starts {@link CHARGE_LOOK_BACK_MS_DEFAULT} back, re-reads those charges and finds them already settled, which
 * costs one indexed read per charge and changes nothing. See docs/decisions/003-failure-and-recovery-policy.md.
 *
 * The cursor only ever points at a charge time the pass has fully dealt with, or at the oldest charge it still has
 * to come back to (pending at the bank, or whose row another worker is still finishing), so advancing it never
 * skips a charge that needs work.
 */

/**
 * How far back a fresh process reads the bank's charges: 24 hours. Longer than any outage the demo or a
 * restart plausibly spans (a process down for a day is an incident someone reconciles on purpose), and short
 * enough that a first pass reads a day of charges, not the bank's whole history. The ledger-to-bank direction
 * does not depend on it: every unfinished row is found from the ledger itself.
 */
export const CHARGE_LOOK_BACK_MS_DEFAULT = 24 * 60 * 60 * 1000;

const cursors = new Map<string, number>();

/**
 * The `since` time for the next listing of `bankUrl`, in epoch milliseconds: the stored cursor, but never
 * older than `lookBackMs` before `nowMs` (so a charge that stays pending for days does not pin the cursor).
 */
export function readChargeCursorMs(bankUrl: string, lookBackMs: number, nowMs: number = Date.now()): number {
  const floorMs = nowMs - lookBackMs;
  const stored = cursors.get(bankUrl);
  return stored === undefined ? floorMs : Math.max(stored, floorMs);
}

/**
 * Stores the cursor of `bankUrl` (epoch milliseconds). The listing is inclusive (`createdAt >= since`), so
 * storing the time of the last charge dealt with re-reads that charge once, harmlessly, and never skips one
 * created in the same millisecond.
 */
export function writeChargeCursorMs(bankUrl: string, sinceMs: number): void {
  cursors.set(bankUrl, sinceMs);
}

/** Forgets every cursor (tests; a process restart does the same). */
export function resetChargeCursors(): void {
  cursors.clear();
}
