"use server";
/**
 * The wallet page's reward action. Thin, like ./actions.ts: parse the form, validate exactly as
 * `POST /api/v1/rewards` does, call the same lib function, and return the API's outcome
 * `{ status, body, replayed }` (contract section 3) for the page to render.
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { requireSessionUser } from "@/lib/auth/session-user";
import { validateRewardRequest } from "@/lib/http/operation-requests";
import { operationOutcome, type ActionOutcome } from "@/lib/http/respond";
import { problem } from "@/lib/problems";
import { creditReward } from "@/lib/rewards/credit-reward";

export type RewardFormState = ActionOutcome | null;

// 117 characters at most (contract section 1): bounded before anything reads it.
const formSchema = z.object({ adId: z.string().max(117) });

function invalid(detail: string): ActionOutcome {
  return { status: 400, body: JSON.stringify(problem("invalid_request", detail)), replayed: false };
}

/**
 * "Watch ad" form (hidden field `adId`): same validation and ledger path as `POST /api/v1/rewards`.
 * Returns the outcome the API would send (201, replayed 201, 429 daily_cap_reached, 503
 * cap_store_unavailable, 422, 400), without headers. Redirects to /sign-in when nobody is signed in;
 * throws on database errors (Next shows its error page; nothing was credited or the credit is replayable).
 */
export async function rewardAction(_previous: RewardFormState, formData: FormData): Promise<RewardFormState> {
  const user = await requireSessionUser();
  const fields = formSchema.safeParse(Object.fromEntries(formData));
  if (!fields.success) return invalid("The form is incomplete.");
  const input = validateRewardRequest({ adId: fields.data.adId });
  if (!input.ok) return invalid(input.detail);
  const { headers: _headers, ...outcome } = operationOutcome(
    await creditReward({ userId: user.userId, adId: input.value.adId }),
  );
  revalidatePath("/wallet");
  return outcome;
}
