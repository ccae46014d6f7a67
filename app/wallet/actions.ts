"use server";
/**
 * The wallet page's money actions. Thin: read the form with zod, turn the amount people typed into minor units,
 * validate exactly like the API, call the same lib functions, and return the API's outcome `{ status, body,
 * replayed }` (contract section 3) with what was typed, so the form shows it again on every answer, with
 * JavaScript or without.
 */
import { revalidatePath } from "next/cache";
import { z } from "zod";
import { env } from "@/lib/env";
import { requireSessionUser } from "@/lib/auth/session-user";
import {
  validatePaymentRequest,
  validateTopupRequest,
  validateTransferRequest,
  formToRaw,
} from "@/lib/http/operation-requests";
import { operationOutcome, type ActionOutcome } from "@/lib/http/respond";
import { parseMoneyInput } from "@/lib/money";
import { problem } from "@/lib/problems";
import { createTopup } from "@/lib/topups/create-topup";
import { createPayment } from "@/lib/payments/create-payment";
import { createTransfer } from "@/lib/transfers/create-transfer";
import { verifyFormRefId } from "@/lib/web/verify-form-ref-id";

/** What the person typed or chose, sent back with every answer. */
export interface MoneyFormValues {
  /** The chosen preset in minor units ("2500"), or "other" for the typed amount. */
  readonly preset: string;
  /** The typed amount, as typed. */
  readonly customAmount: string;
  /** The pay form's payee, as typed or picked ("" on the top-up form). */
  readonly payee: string;
  /** The pay or send form's note, as typed ("" when none). */
  readonly note: string;
  /** The send form's recipient address, as typed ("" on the other forms). */
  readonly to: string;
}

/** A money form's answer: the API's outcome, the values to show again, and the amount asked for (minor units). */
export type MoneyFormState = (ActionOutcome & { values: MoneyFormValues; amountMinor: number | null }) | null;

// Bounds before anything else reads them: a ref id is at most 128 characters (contract section 1) and the
// longest amount a person can type that the pattern accepts is well under 40.
const formSchema = z.object({
  refId: z.string().max(128),
  preset: z.string().max(40).optional(),
  customAmount: z.string().max(40).optional(),
  // Longer than any payee or note the API accepts, so an overlong one reaches the validator and gets its sentence.
  payee: z.string().max(1000).optional(),
  note: z.string().max(1000).optional(),
  // Longer than any address the API accepts (254), for the same reason.
  to: z.string().max(1000).optional(),
});

/** A 400 for the form, in the API's shape; `field` names what the sentence must be about (the amount). */
function invalid(detail: string, field?: "amount" | "payee" | "note" | "to"): ActionOutcome {
  const extensions = field ? { field } : {};
  return { status: 400, body: JSON.stringify(problem("invalid_request", detail, extensions)), replayed: false };
}

/** The amount asked for in minor units: the typed amount when "other" is chosen or something is typed, else the preset. */
function amountFrom(values: MoneyFormValues, currency: string, maxAmountMinor: number): number | null {
  const typed = values.customAmount.trim();
  const minor =
    values.preset === "other" || typed !== ""
      ? parseMoneyInput(typed, currency)
      : /^[1-9][0-9]{0,15}$/.test(values.preset)
        ? Number(values.preset)
        : null;
  return minor !== null && minor <= maxAmountMinor ? minor : null;
}

type MoneyForm = "topup" | "payment" | "transfer";

/**
 * The pay or send form's field a validation detail is about, when it is the payee, the recipient or the note (their
 * sentences differ).
 */
function fieldOf(detail: string): "payee" | "note" | "to" | undefined {
  if (detail.startsWith("payee:")) return "payee";
  if (detail.startsWith("note:")) return "note";
  if (detail.startsWith("to:")) return "to";
  return undefined;
}

/** A form whose hidden reference the server did not issue to this user (edited, or from another deployment). */
const UNISSUED_REFERENCE = "This form's reference was not issued to you; reload the page.";

/**
 * The money forms: parse, validate like the API (but with a server-minted `web:` reference, case C20), check
 * that the server issued that reference to this user's form, run the same lib operation, return its outcome.
 */
async function runMoneyForm(kind: MoneyForm, formData: FormData): Promise<MoneyFormState> {
  const user = await requireSessionUser();
  const fields = formSchema.safeParse(Object.fromEntries(formData));
  const values: MoneyFormValues = {
    preset: fields.success ? (fields.data.preset ?? "") : "",
    customAmount: fields.success ? (fields.data.customAmount ?? "") : "",
    payee: fields.success ? (fields.data.payee ?? "") : "",
    note: fields.success ? (fields.data.note ?? "") : "",
    to: fields.success ? (fields.data.to ?? "") : "",
  };
  if (!fields.success) return { ...invalid("The form is incomplete."), values, amountMinor: null };
  const settings = env();
  const amountMinor = amountFrom(values, settings.WALLET_CURRENCY, settings.MAX_AMOUNT_MINOR);
  if (amountMinor === null) {
    return { ...invalid("The amount is not one this wallet accepts.", "amount"), values, amountMinor: null };
  }
  const rules = { maxAmountMinor: settings.MAX_AMOUNT_MINOR, walletCurrency: settings.WALLET_CURRENCY };
  const amount = String(amountMinor);
  let result;
  if (kind === "topup") {
    const { value, raw } = formToRaw({ refId: fields.data.refId, amount });
    const input = validateTopupRequest(value, raw, rules, "form");
    if (!input.ok) return { ...invalid(input.detail), values, amountMinor };
    if (!(await verifyFormRefId(user.userId, "topup", input.value.refId))) {
      return { ...invalid(UNISSUED_REFERENCE), values, amountMinor };
    }
    result = await createTopup({ userId: user.userId, ...input.value });
  } else if (kind === "transfer") {
    // Contract section 15: the recipient is named by address; the note is optional, and an empty one is no note.
    if (values.to === "") return { ...invalid("to: required", "to"), values, amountMinor };
    const details = { to: values.to, ...(values.note === "" ? {} : { note: values.note }) };
    const { value, raw } = formToRaw({ refId: fields.data.refId, amount, ...details });
    const input = validateTransferRequest(value, raw, rules, "form");
    if (!input.ok) return { ...invalid(input.detail, fieldOf(input.detail)), values, amountMinor };
    if (!(await verifyFormRefId(user.userId, "transfer", input.value.refId))) {
      return { ...invalid(UNISSUED_REFERENCE), values, amountMinor };
    }
    result = await createTransfer({ userId: user.userId, ...input.value });
  } else {
    // The form always names a payee (docs/decisions/055); the note is optional, and an empty one is no note.
    if (values.payee === "") return { ...invalid("payee: required", "payee"), values, amountMinor };
    const details = { payee: values.payee, ...(values.note === "" ? {} : { note: values.note }) };
    const { value, raw } = formToRaw({ orderId: fields.data.refId, amount, ...details });
    const input = validatePaymentRequest(value, raw, rules, "form");
    if (!input.ok) return { ...invalid(input.detail, fieldOf(input.detail)), values, amountMinor };
    if (!(await verifyFormRefId(user.userId, "payment", input.value.orderId))) {
      return { ...invalid(UNISSUED_REFERENCE), values, amountMinor };
    }
    result = await createPayment({ userId: user.userId, ...input.value });
  }
  const { headers: _headers, ...outcome } = operationOutcome(result);
  revalidatePath("/wallet");
  return { ...outcome, values, amountMinor };
}

/** Top-up form: same validation and ledger path as `POST /api/v1/topups`. */
export async function topupAction(_previous: MoneyFormState, formData: FormData): Promise<MoneyFormState> {
  return runMoneyForm("topup", formData);
}

/** Pay form: same validation and ledger path as `POST /api/v1/payments`. */
export async function paymentAction(_previous: MoneyFormState, formData: FormData): Promise<MoneyFormState> {
  return runMoneyForm("payment", formData);
}

/** Send form: same validation and ledger path as `POST /api/v1/transfers`. */
export async function transferAction(_previous: MoneyFormState, formData: FormData): Promise<MoneyFormState> {
  return runMoneyForm("transfer", formData);
}
