/**
 * What the ledger says a user was credited in rewards on one reward day: the source the cap counter is
 * seeded from (contract section 6) and what the wallet page and the audit compare against.
 */
import { pool } from "../db";
import type { Queryable } from "../ledger";

export interface CreditedRewards {
  /** Sum of succeeded reward rows of the day, in minor units. */
  readonly creditedMinor: number;
  /** The ad ids credited that day, oldest first. */
  readonly adIds: string[];
}

// A reward's day is part of its identity: `params.day` (and the ref id's `:<day>` suffix), not the row's
// created_at, so a request that computed its day just before midnight counts for that day. The (user_id,
// type, ref_id) claim index narrows the scan to the user's rewards.
const CREDITED_REWARDS_SQL = `
SELECT params->>'adId' AS ad_id, amount_minor::text AS amount_minor
  FROM ledger_entries
 WHERE user_id = $1 AND type = 'reward' AND status = 'succeeded' AND params->>'day' = $2
 ORDER BY created_at, id`;

/**
 * Reads the succeeded rewards of `userId` on `day` (`YYYY-MM-DD` in REWARD_TZ) in one statement.
 * Returns `{ creditedMinor, adIds }`. Throws database errors as they come.
 */
export async function sumCreditedRewards(
  userId: string,
  day: string,
  db: Queryable = pool(),
): Promise<CreditedRewards> {
  const result = await db.query<{ ad_id: string; amount_minor: string }>(CREDITED_REWARDS_SQL, [userId, day]);
  let creditedMinor = 0;
  for (const row of result.rows) creditedMinor += Number(row.amount_minor);
  return { creditedMinor, adIds: result.rows.map((row) => row.ad_id) };
}
