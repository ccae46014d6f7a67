/**
 * Prometheus metrics of one app process, served by `GET /api/v1/metrics`. prom-client keeps them
 * in memory: they start at zero with the process, survive nothing and claim nothing. They are for graphs and
 * alerts; the ledger and the audit stay the truth (a counter here can miss an event when a process dies between
 * the work and the increment, and never decides anything).
 *
 * Families (every name starts with `wallet_`, plus prom-client's default process and Node.js metrics):
 * - `wallet_http_requests_total` and `wallet_http_request_duration_seconds` by route template, method and status;
 * - `wallet_claim_outcomes_total` by operation type and outcome (claimed, replay, mismatch, in_progress, refused);
 * - `wallet_webhook_deliveries_total` by outcome (credited, duplicate, anomaly_*, invalid_signature, ...);
 * - `wallet_reconciler_passes_total`, `wallet_reconciler_rows_total` by result, `wallet_reconciler_anomalies_total`
 *   by kind, `wallet_reconciler_bank_unreachable_total`;
 * - `wallet_reward_reservations_total` by outcome and `wallet_reward_releases_total` by outcome;
 * - `wallet_db_pool_connections` by state (in_use, idle, waiting), read from the pool at scrape time;
 * - `wallet_flagged_rows` by reason, counted in the database at scrape time.
 *
 * One registry per process, kept on globalThis (Next.js can load this module once per route bundle; prom-client is
 * a server-external package, so every copy shares it and must not register a metric twice).
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** Latency buckets in seconds: 5 ms (a replay from Redis) to 10 s (a top-up waiting on a slow bank). */
const DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Sources of the scrape-time gauges, set by the modules that own them (no import cycle with lib/db). */
export interface ScrapeSources {
  /** The pool's counts, or null when no pool was created yet. */
  poolCounts?: () => { total: number; idle: number; waiting: number } | null;
  /** Rows that need a person, by reason (queried at scrape time). */
  flaggedRows?: () => Promise<Record<string, number>>;
}

function create() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const sources: ScrapeSources = {};
  // Registered in this order, the families keep the order of the scrape's text.
  const metrics = { registry, sources, ...requestCounters(registry), ...recoveryCounters(registry) };
  registerScrapeGauges(registry, sources);
  return metrics;
}

/** The counters and histogram of requests, operations and webhook deliveries. */
function requestCounters(registry: Registry) {
  return {
    httpRequests: new Counter({
      name: "wallet_http_requests_total",
      help: "HTTP requests answered, by route template, method and status.",
      labelNames: ["route", "method", "status"] as const,
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: "wallet_http_request_duration_seconds",
      help: "Time from a request entering the route wrapper to its response, by route template, method and status.",
      labelNames: ["route", "method", "status"] as const,
      buckets: DURATION_BUCKETS_S,
      registers: [registry],
    }),
    claimOutcomes: new Counter({
      name: "wallet_claim_outcomes_total",
      help: "Operation outcomes by type: claimed (first execution), replay, mismatch (422), in_progress (409), refused (before any claim).",
      labelNames: ["type", "outcome"] as const,
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: "wallet_webhook_deliveries_total",
      help: "Bank webhook deliveries by outcome.",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
  };
}

/** The counters of the reconciler's passes and of the reward cap's reservations. */
function recoveryCounters(registry: Registry) {
  return {
    reconcilerPasses: new Counter({
      name: "wallet_reconciler_passes_total",
      help: "Reconciler passes run by this process.",
      registers: [registry],
    }),
    reconcilerRows: new Counter({
      name: "wallet_reconciler_rows_total",
      help: "Rows and charges the reconciler's passes reported, by result (examined, completed, failed, redriven, skipped).",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    reconcilerAnomalies: new Counter({
      name: "wallet_reconciler_anomalies_total",
      help: "Anomalies the reconciler's passes reported, by kind.",
      labelNames: ["kind"] as const,
      registers: [registry],
    }),
    reconcilerBankUnreachable: new Counter({
      name: "wallet_reconciler_bank_unreachable_total",
      help: "Reconciler passes that could not reach the bank.",
      registers: [registry],
    }),
    rewardReservations: new Counter({
      name: "wallet_reward_reservations_total",
      help: "Reward cap reservations by outcome (reserved, already_reserved, over_cap, after_release, unavailable).",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
    rewardReleases: new Counter({
      name: "wallet_reward_releases_total",
      help: "Reward cap reservations released (the credit did not land), by outcome (released, failed, ...).",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
  };
}

/** The gauges read at scrape time from `sources` (the pool's counts, the rows that need a person). */
function registerScrapeGauges(registry: Registry, sources: ScrapeSources): void {
  new Gauge({
    name: "wallet_db_pool_connections",
    help: "Connections of this process's PostgreSQL pool by state: in_use, idle, and waiting (requests queued for one).",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      const counts = sources.poolCounts?.() ?? null;
      if (!counts) return;
      this.set({ state: "in_use" }, counts.total - counts.idle);
      this.set({ state: "idle" }, counts.idle);
      this.set({ state: "waiting" }, counts.waiting);
    },
  });
  new Gauge({
    name: "wallet_flagged_rows",
    help: "Ledger rows that need a person, by reason, counted at scrape time (stuck: unfinished with an expired lease or for more than 5 minutes).",
    labelNames: ["reason"] as const,
    registers: [registry],
    async collect() {
      if (!sources.flaggedRows) return;
      for (const [reason, count] of Object.entries(await sources.flaggedRows())) this.set({ reason }, count);
    },
  });
}

type Metrics = ReturnType<typeof create>;
const globalKey = Symbol.for("wallet.metrics");
type GlobalWithMetrics = typeof globalThis & { [globalKey]?: Metrics };

/** The process's metrics (created on first use). */
export function metrics(): Metrics {
  const g = globalThis as GlobalWithMetrics;
  g[globalKey] ??= create();
  return g[globalKey];
}

/** The outcome of one operation for `wallet_claim_outcomes_total` (see lib/ledger/outcome.ts). */
export type ClaimOutcomeLabel = "claimed" | "replay" | "mismatch" | "in_progress" | "refused";

/**
 * Counts an operation's result: a response produced now is `claimed`, a stored one `replay`; then `mismatch`,
 * `in_progress`, or `refused` (rewards refused before any claim). Returns `result` unchanged.
 */
export function countOperation<R extends { kind: string; replayed?: boolean }>(type: string, result: R): R {
  const outcome: ClaimOutcomeLabel =
    result.kind === "response"
      ? result.replayed
        ? "replay"
        : "claimed"
      : (result.kind as Exclude<ClaimOutcomeLabel, "claimed" | "replay">);
  metrics().claimOutcomes.inc({ type, outcome });
  return result;
}

/** Counts one reconciler pass and what it reported (`wallet_reconciler_*`). */
export function countReconcilePass(result: {
  examined: number;
  completed: number;
  failed: number;
  redriven: number;
  skipped: number;
  anomalies?: ReadonlyArray<{ kind: string }>;
  bankUnreachable?: unknown;
}): void {
  const m = metrics();
  m.reconcilerPasses.inc();
  for (const name of ["examined", "completed", "failed", "redriven", "skipped"] as const) {
    m.reconcilerRows.inc({ result: name }, result[name]);
  }
  for (const anomaly of result.anomalies ?? []) m.reconcilerAnomalies.inc({ kind: anomaly.kind });
  if (result.bankUnreachable) m.reconcilerBankUnreachable.inc();
}
