import { pool } from "../db";
import { ensureRedisConnected, redis } from "../redis";

export interface Health {
  db: "ok" | "down";
  redis: "ok" | "down" | "off";
}

/**
 * Probes PostgreSQL (`SELECT 1`) and Redis (`PING`; "off" when no REDIS_URL is configured) for
 * `GET /api/v1/health` (contract section 4). Never throws.
 */
export async function checkHealth(): Promise<Health> {
  const db = await pool()
    .query("SELECT 1")
    .then(() => "ok" as const)
    .catch(() => "down" as const);
  const client = redis();
  if (!client) return { db, redis: "off" };
  const redisState = await ensureRedisConnected(client)
    .then(() => client.ping())
    .then(() => "ok" as const)
    .catch(() => "down" as const);
  return { db, redis: redisState };
}
