"use client";
/**
 * One "Watch ad" button of the rewards section, driven by `rewardAction`. Works before JavaScript loads (a
 * plain POST of the form); with JavaScript the button is disabled and says so while the action runs. The
 * ad id is minted by the server, so a double click or a resubmit is the same reward operation and replays.
 */
import { useActionState } from "react";
import { useFormStatus } from "react-dom";
import { rewardAction, type RewardFormState } from "./reward-actions";

interface Props {
  /** The ad this button credits (hidden field `adId`). */
  readonly adId: string;
  /** Button text, e.g. "Watch ad A". */
  readonly label: string;
  /** True when no reward fits under today's cap. */
  readonly disabled: boolean;
}

function WatchButton({ label, disabled }: { label: string; disabled: boolean }) {
  const { pending } = useFormStatus();
  return (
    <button type="submit" disabled={disabled || pending} aria-busy={pending} data-testid="watch-ad">
      {pending ? "Watching…" : label}
    </button>
  );
}

/** Minor units as major units with two decimals, integer arithmetic only ("5" → "0.05"). */
function formatAmount(amountMinor: number): string {
  return `${Math.floor(amountMinor / 100)}.${String(amountMinor % 100).padStart(2, "0")}`;
}

function describe(state: RewardFormState): { ok: boolean; text: string } | null {
  if (!state) return null;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(state.body) as Record<string, unknown>;
  } catch {
    return { ok: false, text: "Unexpected answer from the server." };
  }
  if (state.status === 429) return { ok: false, text: "Daily cap reached: no more rewards today." };
  if (state.status === 503)
    return { ok: false, text: "Rewards are unavailable right now; nothing was credited. Try again shortly." };
  if (state.status >= 400) return { ok: false, text: String(body.detail ?? body.title ?? "Failed.") };
  const reward = body.reward as { amount?: number; currency?: string } | undefined;
  const amount =
    typeof reward?.amount === "number" ? `${formatAmount(reward.amount)} ${reward.currency ?? ""}` : "Reward";
  return { ok: true, text: state.replayed ? `${amount} already credited for this ad today.` : `+${amount} credited.` };
}

/**
 * One ad's form: submits `adId` to `rewardAction` and shows the outcome under the button (`role="status"`
 * for a credit or replay, `role="alert"` for 429 "Daily cap reached", 503 and other refusals).
 */
export function RewardAdForm({ adId, label, disabled }: Props) {
  const [state, formAction] = useActionState(rewardAction, null);
  const message = describe(state);
  return (
    <form action={formAction} className="reward-ad" data-testid="reward-ad-form" data-ad-id={adId}>
      <input type="hidden" name="adId" value={adId} />
      <WatchButton label={label} disabled={disabled} />
      {message && (
        <p role={message.ok ? "status" : "alert"} className={message.ok ? "ok" : "error"} data-testid="reward-result">
          {message.text}
        </p>
      )}
    </form>
  );
}
