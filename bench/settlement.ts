/**
 * Whether a top-up load's work is done, read from the ledger: a top-up request answers `processing` and its credit
 * lands later, when the bank's webhook arrives (contract section 5). Requests per second alone would reward a build
 * whose webhooks fall behind: their backlog is work left for after the measured window, or, when two builds take
 * turns on one machine, work done during the other build's turn (docs/decisions/045). So the top-up figures are
 * credits per second in the window, and each window starts with no top-up unfinished.
 */
import type pg from "pg";

/** How often {@link waitUntilSettled} looks: the webhooks of a load land within a few seconds of it. */
const POLL_MS = 250;

/** Top-ups credited (moved to `succeeded`, by any door) in `[from, to)`, on the app's database `db`. */
export async function creditedTopupsBetween(db: pg.Pool, from: Date, to: Date): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ledger_transitions t
      WHERE t.to_status = 'succeeded' AND t.at >= $1 AND t.at < $2
        AND EXISTS (SELECT 1 FROM ledger_entries e WHERE e.user_id = t.user_id AND e.id = t.entry_id AND e.type = 'topup')`,
    [from, to],
  );
  return rows[0]?.n ?? 0;
}

/**
 * Resolves once no top-up on `db` is `initiated` or `processing` (every webhook of the previous load has landed), and
 * returns how long that took in ms. Throws after `timeoutMs` with the count still unfinished.
 */
export async function waitUntilSettled(db: pg.Pool, timeoutMs = 180_000): Promise<number> {
  const startedMs = Date.now();
  for (;;) {
    const { rows } = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM ledger_entries WHERE type = 'topup' AND status IN ('initiated', 'processing')",
    );
    const unfinished = rows[0]?.n ?? 0;
    if (unfinished === 0) return Date.now() - startedMs;
    if (Date.now() - startedMs > timeoutMs)
      throw new Error(`bench: ${unfinished} top-ups still unfinished after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
