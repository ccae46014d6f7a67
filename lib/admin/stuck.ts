/**
 * When the admin page calls an unfinished top-up "stuck": its lease has expired (the reconciler should take it
 * over), or it has been unfinished for longer than {@link STUCK_AGE_MS}.
 */

/**
 * Five minutes. The slowest legitimate path of a top-up is a slow bank reply (5 s) followed by webhook retries,
 * which the sandbox gives up after about two minutes (docs/bank-sandbox.md); a row still unfinished after five
 * minutes is waiting for the reconciler or for a person.
 */
export const STUCK_AGE_MS = 5 * 60_000;

/** A top-up as the admin list shows it (the fields this rule needs). */
export interface StuckCandidate {
  status: string;
  createdAt: string;
  leaseExpiresAt: string | null;
}

/** True when `row` is unfinished and its lease has expired or it is older than {@link STUCK_AGE_MS} at `nowMs`. */
export function isStuckTopup(row: StuckCandidate, nowMs: number = Date.now()): boolean {
  if (row.status !== "initiated" && row.status !== "processing") return false;
  const leaseExpired = row.leaseExpiresAt !== null && Date.parse(row.leaseExpiresAt) < nowMs;
  return leaseExpired || nowMs - Date.parse(row.createdAt) > STUCK_AGE_MS;
}
