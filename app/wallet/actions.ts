"use server";
/**
 * The wallet page's server actions. Thin: parse the form with zod, call the same lib functions as the API,
 * and return the API's outcome `{ status, body, replayed }` (contract section 3), which the page renders.
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { env } from "@/lib/env";
import { requireSessionUser } from "@/lib/auth/session-user";
import { validatePaymentRequest, validateTopupRequest, formToRaw } from "@/lib/http/operation-requests";
import { operationOutcome, type ActionOutcome } from "@/lib/http/respond";
import { problem } from "@/lib/problems";
import { createTopup } from "@/lib/topups/create-topup";
import { createPayment } from "@/lib/payments/create-payment";
import { parseMajorAmount } from "@/lib/web/form-refs";
import { verifyFormRefId } from "@/lib/web/verify-form-ref-id";

export type FormState = ActionOutcome | null;

const formSchema = z.object({
  refId: z.string(),
  preset: z.string().optional(),
  customAmount: z.string().optional(),
});

function invalid(detail: string): ActionOutcome {
  return { status: 400, body: JSON.stringify(problem("invalid_request", detail)), replayed: false };
}

/** Picks the amount: a custom amount when typed, otherwise the chosen preset; both in major units. */
function amountFrom(fields: z.infer<typeof formSchema>): number | null {
  const text = fields.customAmount?.trim() ? fields.customAmount : fields.preset;
  return text ? parseMajorAmount(text) : null;
}

type MoneyForm = "topup" | "payment";

/** A form whose hidden reference the server did not issue to this user (edited, or from another deployment). */
const UNISSUED_REFERENCE = "This form's reference was not issued to you; reload the page.";

/**
 * Both money forms: parse, validate like the API (but with a server-minted `web:` reference, case C20), check
 * that the server issued that reference to this user's form, run the same lib operation, return its outcome.
 */
async function runMoneyForm(kind: MoneyForm, formData: FormData): Promise<FormState> {
  const user = await requireSessionUser();
  const fields = formSchema.safeParse(Object.fromEntries(formData));
  if (!fields.success) return invalid("The form is incomplete.");
  const amountMinor = amountFrom(fields.data);
  if (amountMinor === null) return invalid("Enter an amount such as 25 or 25.50.");
  const settings = env();
  const rules = { maxAmountMinor: settings.MAX_AMOUNT_MINOR, walletCurrency: settings.WALLET_CURRENCY };
  const amount = String(amountMinor);
  let result;
  if (kind === "topup") {
    const { value, raw } = formToRaw({ refId: fields.data.refId, amount });
    const input = validateTopupRequest(value, raw, rules, "form");
    if (!input.ok) return invalid(input.detail);
    if (!(await verifyFormRefId(user.userId, "topup", input.value.refId))) return invalid(UNISSUED_REFERENCE);
    result = await createTopup({ userId: user.userId, ...input.value });
  } else {
    const { value, raw } = formToRaw({ orderId: fields.data.refId, amount });
    const input = validatePaymentRequest(value, raw, rules, "form");
    if (!input.ok) return invalid(input.detail);
    if (!(await verifyFormRefId(user.userId, "payment", input.value.orderId))) return invalid(UNISSUED_REFERENCE);
    result = await createPayment({ userId: user.userId, ...input.value });
  }
  const { headers: _headers, ...outcome } = operationOutcome(result);
  revalidatePath("/wallet");
  return outcome;
}

/** Top-up form: same validation and ledger path as `POST /api/v1/topups`. */
export async function topupAction(_previous: FormState, formData: FormData): Promise<FormState> {
  return runMoneyForm("topup", formData);
}

/** Pay form: same validation and ledger path as `POST /api/v1/payments`. */
export async function paymentAction(_previous: FormState, formData: FormData): Promise<FormState> {
  return runMoneyForm("payment", formData);
}
