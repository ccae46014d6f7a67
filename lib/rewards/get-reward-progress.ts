/**
 * Today's reward progress for the wallet page: what the ledger credited today against the daily cap
 * (contract section 6). Read from PostgreSQL, the source of truth, so the page shows it even when Redis is
 * down (rewards then answer 503, and the page says so when one is tried).
 */
import { rewardDay } from "./reward-day";
import { rewardRulesFromEnv, type RewardRules } from "./rules";
import { sumCreditedRewards } from "./sum-credited-rewards";

export interface RewardProgress {
  /** `YYYY-MM-DD` in `timeZone`. */
  readonly day: string;
  /** The IANA zone whose calendar day the cap counts (REWARD_TZ). */
  readonly timeZone: string;
  /** Credited in rewards on `day`, minor units. */
  readonly earnedMinor: number;
  /** The daily cap, minor units. */
  readonly capMinor: number;
  /** What one reward credits, minor units. */
  readonly amountMinor: number;
  readonly currency: string;
  /** True when one more reward would not fit under the cap: the page shows "Daily cap reached". */
  readonly capReached: boolean;
  /** The ad ids credited on `day`, oldest first. */
  readonly creditedAdIds: string[];
}

/**
 * Reads `userId`'s rewards of the local day of `now` (default: the current time) under `rules` (default:
 * the environment's). Returns a {@link RewardProgress}. Throws database errors.
 */
export async function getRewardProgress(
  userId: string,
  now: Date = new Date(),
  rules: RewardRules = rewardRulesFromEnv(),
): Promise<RewardProgress> {
  const day = rewardDay(now, rules.timeZone);
  const credited = await sumCreditedRewards(userId, day);
  return {
    day,
    timeZone: rules.timeZone,
    earnedMinor: credited.creditedMinor,
    capMinor: rules.dailyCapMinor,
    amountMinor: rules.amountMinor,
    currency: rules.currency,
    capReached: credited.creditedMinor + rules.amountMinor > rules.dailyCapMinor,
    creditedAdIds: credited.adIds,
  };
}
