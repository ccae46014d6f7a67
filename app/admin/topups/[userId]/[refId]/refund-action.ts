"use server";
/**
 * The admin top-up page's refund form (contract section 11): the same operation as
 * `POST /api/v1/admin/topups/{userId}/{refId}/refunds`, for admins only. Thin: check the admin, read the form, call
 * lib/refunds, return the outcome for lib/web/outcome-sentences.ts to put in words.
 */
import { revalidatePath } from "next/cache";
import { env } from "@/lib/env";
import { USER_ID_PATTERN } from "@/lib/bank/merchant-ref";
import { isValidNewRefId, isValidRefId } from "@/lib/ledger";
import { parseMoneyInput } from "@/lib/money";
import { PROBLEM_CODES } from "@/lib/problems";
import { createRefund } from "@/lib/refunds/create-refund";
import { currentAdmin } from "../../../require-admin";

export type RefundActionState =
  | { kind: "idle" }
  /** The amount was read; the form asks to confirm it before anything is sent (`amountText` as typed, trimmed). */
  | { kind: "review"; amountMinor: number; amountText: string }
  | { kind: "done"; status: number; body: string; replayed: boolean; amountMinor: number | null };

function problemState(code: keyof typeof PROBLEM_CODES, amountMinor: number | null): RefundActionState {
  return {
    kind: "done",
    status: PROBLEM_CODES[code].status,
    body: JSON.stringify({ code }),
    replayed: false,
    amountMinor,
  };
}

/**
 * The refund form's two steps (`step`): `review` reads the amount and answers `review` (nothing is sent), so the form
 * can ask to confirm it; `confirm` refunds; `edit` goes back to the empty form (`idle`). A refund is made only by a
 * `confirm`. An amount that cannot be read answers 400 `invalid_request` at either step.
 *
 * Refunds `amount` (typed in the wallet's currency) of the top-up named by the form's hidden fields. Every field is
 * checked like the API route's path and body before anything reaches PostgreSQL (which refuses `\u0000` in text,
 * case C31): the user id as a user id, the top-up's ref id as any ref id, the refund id as a new operation's
 * (not `.` or `..`, case C32); anything else is the 400 `invalid_request` state, never a thrown error (a 500).
 */
export async function refundTopupAction(_previous: RefundActionState, form: FormData): Promise<RefundActionState> {
  const admin = await currentAdmin();
  if (!admin) return problemState("forbidden", null);
  const userId = String(form.get("userId") ?? "");
  const topupRefId = String(form.get("topupRefId") ?? "");
  const refundId = String(form.get("refundId") ?? "");
  const step = String(form.get("step") ?? "");
  if (step === "edit") return { kind: "idle" };
  const amountText = String(form.get("amount") ?? "").trim();
  const amountMinor = parseMoneyInput(amountText, env().WALLET_CURRENCY);
  if (
    !USER_ID_PATTERN.test(userId) ||
    !isValidRefId(topupRefId) ||
    !isValidNewRefId(refundId) ||
    amountMinor === null ||
    amountMinor < 1
  )
    return problemState("invalid_request", amountMinor);
  if (amountMinor > env().MAX_AMOUNT_MINOR) return problemState("invalid_request", amountMinor);
  if (step !== "confirm") return { kind: "review", amountMinor, amountText };
  const result = await createRefund({ userId, topupRefId, refundId, amountMinor });
  revalidatePath("/admin");
  // The timeline page shows the new refund and what is left to refund (and mints a new refund id for the next one).
  revalidatePath(`/admin/topups/${encodeURIComponent(userId)}/${encodeURIComponent(topupRefId)}`);
  switch (result.kind) {
    case "response":
      return { kind: "done", ...result.response, replayed: result.replayed, amountMinor };
    case "topup_not_found":
      return problemState("not_found", amountMinor);
    case "topup_not_refundable":
      return problemState("topup_not_refundable", amountMinor);
    case "mismatch":
      return problemState("idempotency_key_reused", amountMinor);
    case "in_progress":
      return problemState("request_in_progress", amountMinor);
    case "refused":
      return problemState(result.code, amountMinor);
  }
}
