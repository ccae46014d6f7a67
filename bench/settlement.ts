/**
 * Whether a top-up load's work is done, read from the ledger: a top-up request answers `processing` and its credit
 * lands later, when the bank's webhook arrives (contract section 5). Requests per second alone would reward a build
 * whose webhooks fall behind: their backlog is work left for after the measured window, or, when two builds take
 * turns on one machine, work done during the other build's turn (docs/decisions/045). So the top-up figures are
 * credits per second in the window, and each window starts with no top-up unfinished. Payouts are counted the same way:
 * a payout answers `processing` (the bank's payout `pending`) and the bank's webhook, confirmed by a GET, finishes it.
 */
import type pg from "pg";

/** The operations that finish after their answer: a top-up credited, a payout paid (`succeeded`). */
export type SettledType = "topup" | "payout";

/** How often {@link waitUntilSettled} looks: the webhooks of a load land within a few seconds of it. */
const POLL_MS = 250;

/** Top-ups credited (payouts paid, with `type`: moved to `succeeded`, by any door) in `[from, to)`, on `db`. */
export async function creditedTopupsBetween(
  db: pg.Pool,
  from: Date,
  to: Date,
  type: SettledType = "topup",
): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ledger_transitions t
      WHERE t.to_status = 'succeeded' AND t.at >= $1 AND t.at < $2
        AND EXISTS (SELECT 1 FROM ledger_entries e WHERE e.user_id = t.user_id AND e.id = t.entry_id AND e.type = $3)`,
    [from, to, type],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Resolves once no top-up (payout, with `type`) on `db` is `initiated` or `processing` (every webhook of the previous
 * load has landed), and returns how long that took in ms. Throws after `timeoutMs` with the count still unfinished.
 */
export async function waitUntilSettled(db: pg.Pool, type: SettledType = "topup", timeoutMs = 180_000): Promise<number> {
  const startedMs = Date.now();
  for (;;) {
    const { rows } = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM ledger_entries WHERE type = $1 AND status IN ('initiated', 'processing')",
      [type],
    );
    const unfinished = rows[0]?.n ?? 0;
    if (unfinished === 0) return Date.now() - startedMs;
    if (Date.now() - startedMs > timeoutMs)
      throw new Error(`bench: ${unfinished} ${type}s still unfinished after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
