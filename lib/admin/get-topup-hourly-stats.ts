/**
 * The admin page's charts: top-ups of the last 24 hours, hour by hour. Two series, both read from PostgreSQL:
 *
 * - how many top-ups were created in each hour, by their state now (`initiated`, `processing`, `succeeded`,
 *   `failed`): a rising `failed` or a `processing` that does not drain shows at a glance;
 * - how long top-ups took from the claim (the row's creation) to their final state, median and 95th percentile,
 *   for the top-ups that became final in each hour (from the audit table's final transitions): the bank's and
 *   the webhook's latency as people feel it.
 *
 * Both queries read only the window (indexes of migration 20261201140100_topup_chart_indexes), so the page's cost
 * does not grow with the ledger's age.
 */
import { pool } from "../db";
import type { EntryStatus, Queryable } from "../ledger";

/** 24 hourly buckets: the current hour and the 23 before it. */
const HOURS = 24;

export interface HourlyStatusCounts {
  /** Start of the hour, ISO-8601 UTC. */
  readonly hour: string;
  readonly counts: Readonly<Record<EntryStatus, number>>;
}

export interface HourlyLatency {
  /** Start of the hour, ISO-8601 UTC. */
  readonly hour: string;
  /** Top-ups that became final in this hour. */
  readonly finished: number;
  /** Median seconds from claim to final state; null when none finished in this hour. */
  readonly medianS: number | null;
  /** 95th percentile of the same; null when none finished. */
  readonly p95S: number | null;
}

export interface TopupHourlyStats {
  /** Oldest first, exactly {@link HOURS} buckets (hours without top-ups count zero). */
  readonly byStatus: HourlyStatusCounts[];
  /** Oldest first, exactly {@link HOURS} buckets. */
  readonly claimToFinal: HourlyLatency[];
}

// $1 the first hour's start. Grouped by creation hour and current state.
const BY_STATUS_SQL = `
SELECT date_trunc('hour', created_at) AS hour, status, count(*)::int AS n
  FROM ledger_entries
 WHERE type = 'topup' AND created_at >= $1
 GROUP BY 1, 2`;

// $1 the first hour's start. One final transition per row (a final row never moves again: contract section 2);
// grouped by the hour it became final. Seconds as float8: percentile_cont interpolates.
const CLAIM_TO_FINAL_SQL = `
SELECT date_trunc('hour', t.at) AS hour,
       count(*)::int AS n,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM t.at - e.created_at))::float8 AS p50,
       percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM t.at - e.created_at))::float8 AS p95
  FROM ledger_transitions t
  JOIN ledger_entries e ON e.user_id = t.user_id AND e.id = t.entry_id
 WHERE t.to_status IN ('succeeded', 'failed')
   AND t.from_status IS DISTINCT FROM t.to_status
   AND t.at >= $1
   AND e.type = 'topup'
 GROUP BY 1`;

/** The start of the hour of `now`, minus `HOURS - 1` hours: the first bucket. */
function firstHour(now: Date): Date {
  const start = new Date(now);
  start.setUTCMinutes(0, 0, 0);
  return new Date(start.getTime() - (HOURS - 1) * 3_600_000);
}

/** Rounds seconds to milliseconds (the timestamps' precision). */
function seconds(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? Math.round(value * 1000) / 1000 : null;
}

/**
 * Reads both series for the 24 hours that end with the hour of `now` (default: the current time). Returns
 * {@link TopupHourlyStats} with every bucket present, oldest first. Throws database errors.
 */
export async function getTopupHourlyStats(now: Date = new Date(), db: Queryable = pool()): Promise<TopupHourlyStats> {
  const first = firstHour(now);
  const [statusRows, latencyRows] = await Promise.all([
    db.query<{ hour: Date; status: EntryStatus; n: number }>(BY_STATUS_SQL, [first]),
    db.query<{ hour: Date; n: number; p50: number | null; p95: number | null }>(CLAIM_TO_FINAL_SQL, [first]),
  ]);
  const hours = Array.from({ length: HOURS }, (_, index) => new Date(first.getTime() + index * 3_600_000));
  const indexOf = (hour: Date) => Math.round((hour.getTime() - first.getTime()) / 3_600_000);
  const byStatus = hours.map((hour) => ({
    hour: hour.toISOString(),
    counts: { initiated: 0, processing: 0, succeeded: 0, failed: 0 } as Record<EntryStatus, number>,
  }));
  for (const row of statusRows.rows) {
    const bucket = byStatus[indexOf(row.hour)];
    if (bucket && row.status in bucket.counts) bucket.counts[row.status] += row.n;
  }
  const claimToFinal: HourlyLatency[] = hours.map((hour) => ({
    hour: hour.toISOString(),
    finished: 0,
    medianS: null,
    p95S: null,
  }));
  for (const row of latencyRows.rows) {
    const index = indexOf(row.hour);
    if (index < 0 || index >= HOURS) continue;
    claimToFinal[index] = {
      hour: hours[index]!.toISOString(),
      finished: row.n,
      medianS: seconds(row.p50),
      p95S: seconds(row.p95),
    };
  }
  return { byStatus, claimToFinal };
}
