/**
 * The repair of reward counters that a Redis failover left below the ledger (docs/decisions/016): for
 * every (user, day) whose `reward_cap_days` row changed recently, the Redis counter is raised to at least the
 * day's credited total. Raising to what the ledger credited never goes above the truth (the counter is credited
 * plus reservations in flight), so it is safe at any moment; it only brings back what a promoted lagging replica
 * lost, after which invariant 7.3 compares the counter with the ledger again. Run by every reconciler pass.
 */
import { pool } from "../db";
import { env } from "../env";
import type { Queryable } from "../ledger";
import { log } from "../log";
import { capKeysExpireAtS, CapStoreUnavailableError, rewardCapStore, type RedisRewardCapStore } from "./cap-store";

/**
 * Rows changed in the last 15 minutes are repaired. A lagging replica loses the last seconds of writes before its
 * master died (docs/development.md note 28); 15 minutes covers a replica that lagged far longer, and a counter older
 * than that which went missing altogether is seeded from the ledger by the next reserve anyway.
 */
const REWARD_REPAIR_WINDOW_MS = 15 * 60_000;

/** Rows per pass: 1000, one pipelined script each, a few milliseconds of Redis time. */
const REWARD_REPAIR_ROWS_MAX = 1000;

const RECENT_DAYS_SQL = `
SELECT user_id, day, credited_minor
  FROM reward_cap_days
 WHERE updated_at > now() - $1::int * interval '1 millisecond'
   AND ($2::text[] IS NULL OR user_id = ANY ($2::text[]))
 ORDER BY updated_at DESC
 LIMIT $3`;

export interface RepairRewardCountersOptions {
  /** Only these users (the storm's, a test's); null or absent: everyone. */
  readonly userIds?: readonly string[] | null;
  readonly capStore?: RedisRewardCapStore;
  readonly db?: Queryable;
  readonly windowMs?: number;
}

/**
 * Raises every recently credited day's counter that is below the ledger's total. Returns `{ examined, raised }`
 * (rows read, counters raised); when Redis is off or unreachable nothing is raised (unreachable is logged: the next
 * pass tries again). Never throws for Redis; throws database errors as they come.
 */
export async function repairRewardCounters(
  options: RepairRewardCountersOptions = {},
): Promise<{ examined: number; raised: number }> {
  const store = options.capStore ?? rewardCapStore();
  const rows = await (options.db ?? pool()).query<{ user_id: string; day: string; credited_minor: number }>(
    RECENT_DAYS_SQL,
    [
      options.windowMs ?? REWARD_REPAIR_WINDOW_MS,
      options.userIds ? [...options.userIds] : null,
      REWARD_REPAIR_ROWS_MAX,
    ],
  );
  const timeZone = env().REWARD_TZ;
  let raised = 0;
  try {
    await Promise.all(
      rows.rows.map(async (row) => {
        const outcome = await store.raiseCounter(
          row.user_id,
          row.day,
          row.credited_minor,
          capKeysExpireAtS(row.day, timeZone),
        );
        if (outcome.raised) {
          raised += 1;
          log().warn(
            { userId: row.user_id, day: row.day, counterMinor: outcome.counterMinor, ledgerMinor: row.credited_minor },
            "reward counter below the ledger (Redis lost writes): raised",
          );
        }
      }),
    );
  } catch (error) {
    if (!(error instanceof CapStoreUnavailableError)) throw error;
    // No Redis configured: nothing to repair (and nothing to say on every pass).
    if (error.reason !== "off") {
      log().warn(
        { reason: error.reason, message: error.message },
        "reward counters not repaired: cap store unavailable",
      );
    }
  }
  return { examined: rows.rows.length, raised };
}
