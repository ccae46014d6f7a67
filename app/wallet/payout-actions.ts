"use server";
/**
 * The wallet page's withdraw action. Thin, like ./actions.ts: read the form with zod, turn the typed amount into
 * minor units, validate exactly like `POST /api/v1/payouts` (with the server-minted `web:` reference, case C20), check
 * that the server issued that reference to this user's withdraw form, call the same lib function, and return the
 * API's outcome `{ status, body, replayed }` (contract section 3) with what was typed.
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { requireSessionUser } from "@/lib/auth/session-user";
import { env } from "@/lib/env";
import { formToRaw, validatePayoutRequest } from "@/lib/http/operation-requests";
import { operationOutcome, type ActionOutcome } from "@/lib/http/respond";
import { parseMoneyInput } from "@/lib/money";
import { createPayout } from "@/lib/payouts/create-payout";
import { problem } from "@/lib/problems";
import { verifyFormRefId } from "@/lib/web/verify-form-ref-id";

/** What the person typed, sent back with every answer. */
export interface PayoutFormValues {
  readonly amount: string;
  readonly destination: string;
}

/** The withdraw form's answer: the API's outcome, the values to show again, and the amount asked for (minor units). */
export type PayoutFormState = (ActionOutcome & { values: PayoutFormValues; amountMinor: number | null }) | null;

// Bounded before anything reads them: a ref id is at most 128 characters (contract section 1); longer amounts and
// account numbers than these are refused by the validator anyway, with their sentence.
const formSchema = z.object({
  refId: z.string().max(128),
  amount: z.string().max(40).optional(),
  destination: z.string().max(100).optional(),
});

/** A 400 for the form, in the API's shape; `field` names what the sentence must be about. */
function invalid(detail: string, field?: "amount" | "destination"): ActionOutcome {
  const extensions = field ? { field } : {};
  return { status: 400, body: JSON.stringify(problem("invalid_request", detail, extensions)), replayed: false };
}

/** A form whose hidden reference the server did not issue to this user (edited, or from another deployment). */
const UNISSUED_REFERENCE = "This form's reference was not issued to you; reload the page.";

/** Withdraw form: same validation and ledger path as `POST /api/v1/payouts`. */
export async function payoutAction(_previous: PayoutFormState, formData: FormData): Promise<PayoutFormState> {
  const user = await requireSessionUser();
  const fields = formSchema.safeParse(Object.fromEntries(formData));
  const values: PayoutFormValues = {
    amount: fields.success ? (fields.data.amount ?? "") : "",
    destination: fields.success ? (fields.data.destination ?? "") : "",
  };
  if (!fields.success) return { ...invalid("The form is incomplete."), values, amountMinor: null };
  const settings = env();
  const typed = parseMoneyInput(values.amount.trim(), settings.WALLET_CURRENCY);
  const amountMinor = typed !== null && typed <= settings.MAX_AMOUNT_MINOR ? typed : null;
  if (amountMinor === null) {
    return { ...invalid("The amount is not one this wallet accepts.", "amount"), values, amountMinor: null };
  }
  // Spaces people type between digit groups are not part of the number.
  const destination = values.destination.replace(/\s+/g, "");
  const rules = { maxAmountMinor: settings.MAX_AMOUNT_MINOR, walletCurrency: settings.WALLET_CURRENCY };
  const { value, raw } = formToRaw({ refId: fields.data.refId, amount: String(amountMinor), destination });
  const input = validatePayoutRequest(value, raw, rules, "form");
  if (!input.ok) {
    const field = input.detail.startsWith("destination") ? "destination" : undefined;
    return { ...invalid(input.detail, field), values, amountMinor };
  }
  if (!(await verifyFormRefId(user.userId, "payout", input.value.refId))) {
    return { ...invalid(UNISSUED_REFERENCE), values, amountMinor };
  }
  const { headers: _headers, ...outcome } = operationOutcome(
    await createPayout({ userId: user.userId, ...input.value }),
  );
  revalidatePath("/wallet");
  return { ...outcome, values, amountMinor };
}
