"use client";
/**
 * One "Watch ad" button of the rewards section, driven by `rewardAction`. Works before JavaScript loads (a plain
 * POST of the form); with JavaScript the button is disabled and says so while the action runs. The ad's id is the
 * same every day (lib/rewards/offered-ads.ts), so a second click on the same day replays the first credit and says
 * "already credited today" (contract section 6, case C21).
 */
import { useActionState } from "react";
import { useFormStatus } from "react-dom";
import { describeOutcome } from "@/lib/web/outcome-sentences";
import { rewardAction } from "./reward-actions";

interface Props {
  /** The ad this button credits (hidden field `adId`). */
  readonly adId: string;
  /** The ad's name for people ("ad A"). */
  readonly name: string;
  /** True when this ad was credited today already (a click then replays). */
  readonly creditedToday: boolean;
  /** True when no reward fits under today's cap. */
  readonly capReached: boolean;
  readonly currency: string;
  readonly maxAmountMinor: number;
  readonly rewardCapMinor: number;
}

function WatchButton({ name, disabled }: { name: string; disabled: boolean }) {
  const { pending } = useFormStatus();
  return (
    <button type="submit" disabled={disabled || pending} aria-busy={pending} data-testid="watch-ad">
      {pending ? "Watching…" : `Watch ${name}`}
    </button>
  );
}

/**
 * One ad's form: submits `adId` to `rewardAction` and shows the outcome under the button (`role="status"` for a
 * credit or a replay, `role="alert"` for the daily cap, an unavailable cap store and other refusals). An ad credited
 * today says so before any click. The button stays enabled for an ad credited today (a click replays and says so)
 * and is disabled for the others once the cap is reached (the server still decides: a stale page gets the 429).
 */
export function RewardAdForm({
  adId,
  name,
  creditedToday,
  capReached,
  currency,
  maxAmountMinor,
  rewardCapMinor,
}: Props) {
  const [state, formAction] = useActionState(rewardAction, null);
  const sentence = state
    ? describeOutcome(state, { kind: "reward", currency, maxAmountMinor, adName: name, rewardCapMinor })
    : null;
  return (
    <form
      action={formAction}
      className={`reward-ad${creditedToday ? " credited" : ""}`}
      data-testid="reward-ad-form"
      data-ad-id={adId}
      data-credited={creditedToday}
    >
      <input type="hidden" name="adId" value={adId} />
      <WatchButton name={name} disabled={capReached && !creditedToday} />
      {creditedToday && !sentence && <p className="hint">Credited today</p>}
      {sentence && (
        <p
          role={sentence.tone === "error" ? "alert" : "status"}
          className={`result ${sentence.tone}`}
          data-testid="reward-result"
        >
          {sentence.text}
        </p>
      )}
    </form>
  );
}
