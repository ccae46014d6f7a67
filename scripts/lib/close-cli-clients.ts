/**
 * The end of every one-shot command that touches PostgreSQL or Redis (`npm run reconcile`, `audit`, `users`): closes
 * the process's database pool and Prisma client (lib/db.ts) and its Redis client (lib/redis.ts), so that nothing is
 * left to keep Node's event loop alive and the command exits as soon as its result is printed (case C30: a reconciler
 * pass whose reward-counter repair opened Redis never ended).
 */
import { closeDb } from "../../lib/db";
import { closeRedis } from "../../lib/redis";

/**
 * Closes the database pool, Prisma and the Redis client, whichever were opened (each close is a no-op for a client
 * never created). Never throws: a client that cannot close cleanly is dropped (lib/db and lib/redis catch their own
 * errors). Call it once, after the command's last use of either, before setting `process.exitCode`.
 */
export async function closeCliClients(): Promise<void> {
  await Promise.all([closeDb(), closeRedis()]);
}
