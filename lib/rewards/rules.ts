/**
 * The reward rules of contract section 6, read once from the validated environment (lib/env.ts):
 * amount per reward, daily cap per user, the zone whose calendar day the cap counts, and the wallet currency.
 */
import { env } from "../env";

export interface RewardRules {
  /** Credited per reward, in minor units of `currency` (contract default 5). */
  readonly amountMinor: number;
  /** Most a user may be credited in rewards per local day, in minor units (contract default 50). */
  readonly dailyCapMinor: number;
  /** IANA zone whose calendar day keys rewards and the cap (contract default "UTC"). */
  readonly timeZone: string;
  /** ISO 4217 code of the wallet (WALLET_CURRENCY). */
  readonly currency: string;
}

/** The rules configured by REWARD_AMOUNT_MINOR, REWARD_DAILY_CAP_MINOR, REWARD_TZ and WALLET_CURRENCY. */
export function rewardRulesFromEnv(): RewardRules {
  const settings = env();
  return {
    amountMinor: settings.REWARD_AMOUNT_MINOR,
    dailyCapMinor: settings.REWARD_DAILY_CAP_MINOR,
    timeZone: settings.REWARD_TZ,
    currency: settings.WALLET_CURRENCY,
  };
}
