/**
 * The wallet page's rewards section (contract section 6): the ads, today's earnings against the daily cap, and a
 * clear "daily limit reached" once no further reward fits. A server component: it reads the ledger
 * (lib/rewards/get-reward-progress.ts) and renders one client form per ad.
 */
import { env } from "@/lib/env";
import { formatMoney } from "@/lib/money";
import { getRewardProgress } from "@/lib/rewards/get-reward-progress";
import { offeredAds } from "@/lib/rewards/offered-ads";
import { rewardRulesFromEnv } from "@/lib/rewards/rules";
import { RewardAdForm } from "./reward-ad-form";

export interface RewardsSectionProps {
  /** The signed-in user (from requireSessionUser), whose rewards of today are shown. */
  readonly userId: string;
}

/**
 * The rewards card: today's earnings (from the ledger) against the cap, one "Watch ad" form per offered ad (enough
 * to reach the cap, case C21), each saying whether it was credited today, and a `role="status"` line once no
 * further reward fits. Throws database errors.
 */
export async function RewardsSection({ userId }: RewardsSectionProps) {
  const rules = rewardRulesFromEnv();
  const progress = await getRewardProgress(userId, new Date(), rules);
  const credited = new Set(progress.creditedAdIds);
  const currency = progress.currency;
  return (
    <section className="card rewards" data-testid="rewards" aria-labelledby="rewards-heading">
      <h2 id="rewards-heading">Rewards</h2>
      <p>
        Earned today <strong data-testid="rewards-earned">{formatMoney(progress.earnedMinor, currency)}</strong> of{" "}
        <span data-testid="rewards-cap">{formatMoney(progress.capMinor, currency)}</span>.{" "}
        <span className="hint">
          Each ad pays {formatMoney(progress.amountMinor, currency)} once a day (days end at midnight{" "}
          {progress.timeZone}).
        </span>
      </p>
      <progress
        max={progress.capMinor}
        value={Math.min(progress.earnedMinor, progress.capMinor)}
        aria-label="Rewards earned today"
      />
      {progress.capReached && (
        <p role="status" className="result info" data-testid="reward-cap-reached">
          Daily limit reached: you have earned today&apos;s {formatMoney(progress.capMinor, currency)}. Come back
          tomorrow.
        </p>
      )}
      <div className="reward-ads">
        {offeredAds(rules).map((ad) => (
          <RewardAdForm
            key={ad.adId}
            adId={ad.adId}
            name={ad.name}
            creditedToday={credited.has(ad.adId)}
            capReached={progress.capReached}
            currency={currency}
            maxAmountMinor={env().MAX_AMOUNT_MINOR}
            rewardCapMinor={progress.capMinor}
          />
        ))}
      </div>
    </section>
  );
}
