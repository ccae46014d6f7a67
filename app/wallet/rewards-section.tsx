/**
 * The wallet page's rewards section (contract section 6): a few ad buttons, today's earnings against the
 * daily cap, and a clear "Daily cap reached" status once no further reward fits. A server component: it reads
 * the ledger (lib/rewards/get-reward-progress.ts) and renders one client form per ad.
 */
import { getRewardProgress } from "@/lib/rewards/get-reward-progress";
import { formatMinor } from "@/lib/money";
import { RewardAdForm } from "./reward-ad-form";

/**
 * The ad slots shown. Four: with the contract's 5 per reward and cap 50, each slot serves a fresh ad after
 * every credit, so the cap is reachable from the page in ten clicks.
 */
const AD_SLOTS = [
  { slot: "a", label: "Watch ad A" },
  { slot: "b", label: "Watch ad B" },
  { slot: "c", label: "Watch ad C" },
  { slot: "d", label: "Watch ad D" },
] as const;

/**
 * The ad a slot shows next: `ad-<slot>-<n>` with the smallest n not yet credited today. Minted by the server
 * like the other forms' ref ids (lib/web/form-refs.ts), so every render until the credit shows the same ad
 * and a double click is one reward operation; the next render after it shows the next ad.
 */
function nextAdId(slot: string, credited: ReadonlySet<string>): string {
  let sequence = 1;
  while (credited.has(`ad-${slot}-${sequence}`)) sequence++;
  return `ad-${slot}-${sequence}`;
}

export interface RewardsSectionProps {
  /** The signed-in user (from requireSessionUser), whose rewards of today are shown. */
  readonly userId: string;
}

/**
 * The rewards card: today's earnings (from the ledger) against the cap, one "Watch ad" form per slot, and a
 * `role="status"` "Daily cap reached" line once no further reward fits (the buttons are then disabled; the
 * server still decides, and answers 429 if a stale page submits). Throws database errors.
 */
export async function RewardsSection({ userId }: RewardsSectionProps) {
  const progress = await getRewardProgress(userId);
  const credited = new Set(progress.creditedAdIds);
  return (
    <section className="card rewards" data-testid="rewards">
      <h2>Rewards</h2>
      <p>
        Earned today <strong data-testid="rewards-earned">{formatMinor(progress.earnedMinor)}</strong> of{" "}
        <span data-testid="rewards-cap">{formatMinor(progress.capMinor)}</span> {progress.currency}{" "}
        <small>
          ({formatMinor(progress.amountMinor)} per ad; day {progress.day}, {progress.timeZone})
        </small>
      </p>
      <progress
        max={progress.capMinor}
        value={Math.min(progress.earnedMinor, progress.capMinor)}
        aria-label="Rewards earned today"
      />
      {progress.capReached && (
        <p role="status" className="error" data-testid="reward-cap-reached">
          Daily cap reached: you have earned today&apos;s {formatMinor(progress.capMinor)} {progress.currency}. Come
          back tomorrow.
        </p>
      )}
      <div className="reward-ads">
        {AD_SLOTS.map(({ slot, label }) => (
          <RewardAdForm key={slot} adId={nextAdId(slot, credited)} label={label} disabled={progress.capReached} />
        ))}
      </div>
    </section>
  );
}
