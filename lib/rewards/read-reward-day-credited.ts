/**
 * The reward cap in PostgreSQL: one row per (user, reward day) in `reward_cap_days` holds what
 * the ledger credited in rewards that day, raised in the reward's own statement by a conditional upsert that
 * refuses to pass the cap (ledger_decide_reward, lib/ledger/reward-statement.ts). Redis stays the fast reservation
 * in front (contract section 6); this row is what holds the cap when Redis hands back a counter lower than the
 * truth (a promoted lagging replica lost acknowledged increments: docs/development.md note 28 measured 49).
 */
import { type Queryable, prepared } from "../ledger";

const READ_SQL = `SELECT credited_minor FROM reward_cap_days WHERE user_id = $1 AND day = $2`;

/**
 * The day's credited total of `userId` from its `reward_cap_days` row, in minor units (0 without a row), read in
 * its own statement. For a request that did not run the credit itself (a duplicate that lost the claim, a commit
 * whose answer was lost, or a credit PostgreSQL refused past the cap) and must still confirm or release with the
 * ledger's total. Throws database errors.
 */
export async function readRewardDayCredited(userId: string, day: string, db: Queryable): Promise<number> {
  const current = await db.query<{ credited_minor: number }>(prepared("reward_cap_day_read", READ_SQL, [userId, day]));
  return current.rows[0]?.credited_minor ?? 0;
}
