/**
 * What `GET /api/v1/metrics` answers: the process's registry in the Prometheus text format, after reading the
 * scrape-time gauges (the PostgreSQL pool's connections, rows that need a person). A failure to count the flagged
 * rows (database down) leaves that gauge out of the scrape instead of failing it: the other metrics matter most
 * exactly then.
 */
import { countStuckTopups } from "../admin/list-stuck-topups";
import { pool } from "../db";
import { log } from "../log";
import { metrics } from "./registry";

/** Returns the media type (`text/plain; version=0.0.4; charset=utf-8`) and the exposition text. */
export async function metricsText(): Promise<{ contentType: string; text: string }> {
  const registry = metrics();
  registry.sources.poolCounts = () => {
    const current = pool();
    return { total: current.totalCount, idle: current.idleCount, waiting: current.waitingCount };
  };
  registry.sources.flaggedRows = async (): Promise<Record<string, number>> => {
    try {
      return { stuck: await countStuckTopups() };
    } catch (error) {
      log().warn({ err: error }, "metrics: flagged rows not counted");
      return {};
    }
  };
  return { contentType: registry.registry.contentType, text: await registry.registry.metrics() };
}
