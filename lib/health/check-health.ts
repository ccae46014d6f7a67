import { pool } from "../db";
import { failoverRetriesInProgress } from "../ledger/retry";
import { ensureRedisConnected, redis } from "../redis";

export interface Health {
  /**
   * "ok": reachable. "degraded": reachable from this probe, but an operation of this process is retrying after a
   * lost connection right now (a failover is under way, issue 11). "down": the probe could not reach it.
   */
  db: "ok" | "degraded" | "down";
  redis: "ok" | "down" | "off";
}

/**
 * Probes PostgreSQL (`SELECT 1`) and Redis (`PING`; "off" when no Redis is configured) for
 * `GET /api/v1/health` (contract section 4; "degraded" per docs/decisions/015-failover-and-poolers.md).
 * Never throws.
 */
export async function checkHealth(): Promise<Health> {
  const reachable = await pool()
    .query("SELECT 1")
    .then(() => true)
    .catch(() => false);
  const db = !reachable ? "down" : failoverRetriesInProgress() > 0 ? "degraded" : "ok";
  const client = redis();
  if (!client) return { db, redis: "off" };
  const redisState = await ensureRedisConnected(client)
    .then(() => client.ping())
    .then(() => "ok" as const)
    .catch(() => "down" as const);
  return { db, redis: redisState };
}
