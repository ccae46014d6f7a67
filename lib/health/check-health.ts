import { z } from "zod";
import { pool } from "../db";
import { failoverRetriesInProgress } from "../ledger";
import { ensureRedisConnected, redis } from "../redis";

/** `GET /api/v1/health` (contract section 4); the OpenAPI document's `Health`. */
export const healthSchema = z
  .strictObject({
    db: z.enum(["ok", "degraded", "down"]).meta({
      description:
        "`ok`: reachable. `degraded`: reachable, but an operation of this process is retrying after a lost " +
        "connection right now (a failover is under way). `down`: the probe could not reach it.",
    }),
    redis: z.enum(["ok", "down", "off"]).meta({ description: "`off` when no Redis is configured." }),
  })
  .meta({ id: "Health" });
export type Health = z.infer<typeof healthSchema>;

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
