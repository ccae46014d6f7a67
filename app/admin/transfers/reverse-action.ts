"use server";
/**
 * The admin transfers page's reverse form (contract section 15.1; docs/decisions/063): the same operation as
 * `POST /api/v1/admin/transfers/{userId}/{refId}/reversal`, for admins only. Thin: check the admin, read the form,
 * call lib/transfers, return the outcome for the form to put in words.
 */
import { revalidatePath } from "next/cache";
import { USER_ID_PATTERN } from "@/lib/bank/merchant-ref";
import { isValidRefId } from "@/lib/ledger";
import { PROBLEM_CODES } from "@/lib/problems";
import { reversalRequestSchema } from "@/lib/transfers/reversal-request";
import { reverseTransfer } from "@/lib/transfers/reverse-transfer";
import { currentAdmin } from "../require-admin";

export type ReverseActionState = { kind: "idle" } | { kind: "done"; status: number; body: string; replayed: boolean };

function problemState(code: keyof typeof PROBLEM_CODES): ReverseActionState {
  return { kind: "done", status: PROBLEM_CODES[code].status, body: JSON.stringify({ code }), replayed: false };
}

/**
 * Reverses the transfer named by the form's hidden fields (`userId`, the sender, and `refId`) with the admin's
 * `reason`. Every field is checked like the API route's path and body before anything reaches PostgreSQL; anything
 * else is the 400 `invalid_request` state, never a thrown error (a 500). Pressing the button twice, or two admins
 * pressing it, is one reversal: the second answer is the first one replayed.
 */
export async function reverseTransferAction(
  _previous: ReverseActionState,
  form: FormData,
): Promise<ReverseActionState> {
  const admin = await currentAdmin();
  if (!admin) return problemState("forbidden");
  const userId = String(form.get("userId") ?? "");
  const refId = String(form.get("refId") ?? "");
  const body = reversalRequestSchema.safeParse({ reason: String(form.get("reason") ?? "") });
  if (!USER_ID_PATTERN.test(userId) || !isValidRefId(refId) || !body.success) return problemState("invalid_request");
  const result = await reverseTransfer({ userId, refId, reason: body.data.reason, adminId: admin.userId });
  revalidatePath("/admin/transfers");
  switch (result.kind) {
    case "response":
      return { kind: "done", ...result.response, replayed: result.replayed };
    case "transfer_not_found":
      return problemState("not_found");
    case "transfer_not_reversible":
      return problemState("transfer_not_reversible");
    case "mismatch":
      return problemState("idempotency_key_reused");
    case "in_progress":
      return problemState("request_in_progress");
    case "refused":
      return problemState(result.code);
  }
}
