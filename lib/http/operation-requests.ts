/**
 * Validation of operation requests (contract section 1), shared by route handlers and server actions so
 * both doors accept exactly the same inputs. Everything here runs before any database or Redis work.
 * Unknown members are refused: a misspelt field in a payments API must not be silently ignored.
 */
import { z } from "zod";
import { AD_ID_PATTERN, isDotSegment, REF_ID_PATTERN } from "../ledger";
import { env } from "../env";
import { readJsonBody } from "./read-json-body";
import { parseAmountToken, type RawMembers } from "./raw-json";
import type { InputOutcome } from "./route";
import { FORM_REF_PREFIX, inFormRefNamespace, isFormRefId } from "../web/form-refs";
import { isSandboxAccountNumber } from "../bank/payouts-client";
import { NOTE_LENGTH_MAX, PAYEE_LENGTH_MAX, READABLE_TEXT_PATTERN } from "../payments/payees";

export type Validated<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly detail: string };

/** Any ref id, as the API reads one back (`GET /api/v1/topups/{refId}`): contract section 1. */
export const refIdSchema = z
  .string()
  .regex(REF_ID_PATTERN, "must be 1..128 characters of A-Z a-z 0-9 . _ : -")
  .meta({ description: "The operation's own reference: the key, taken exactly as sent (contract section 1)." });
/**
 * A new operation's ref id (a top-up's refId, a payment's orderId, a refund's refundId): any ref id but the dot
 * segments `.` and `..`, which URL normalisation removes from a path, so the operation's page and its refund route
 * could never be addressed (contract section 1, case C32, docs/decisions/049-dot-segment-references.md). Reading
 * takes every ref id ({@link refIdSchema}): a row stored before this rule stays readable.
 */
export const newRefIdSchema = refIdSchema.refine((value) => !isDotSegment(value), {
  message: 'must not be "." or ".." (URL paths drop these segments; docs/decisions/049)',
});
/**
 * A new operation's reference from an API client: a new ref id outside the wallet forms' namespace, so that no
 * client can name a reference a form will show (case C20, docs/decisions/033-form-references.md).
 */
const refId = newRefIdSchema
  .refine((value) => !inFormRefNamespace(value), {
    message: `must not start with "${FORM_REF_PREFIX}" (reserved for the wallet page's forms)`,
  })
  .meta({
    description:
      "The operation's own reference: the key, taken exactly as sent (contract section 1). References starting " +
      `with \`${FORM_REF_PREFIX}\` belong to the wallet page's forms and are refused (docs/decisions/033), and so ` +
      "are `.` and `..`, which URL paths drop (docs/decisions/049).",
  });
/** A wallet form's reference: exactly the shape the server mints (`web:<uuid>`, lib/web/form-refs.ts). */
const formRefId = refIdSchema.refine(isFormRefId, {
  message: "is not a reference this page issued; reload the page",
});
const currency = z
  .string()
  .regex(/^[A-Z]{3}$/, "must be a 3-letter ISO 4217 code")
  .meta({ description: "Optional; when sent, it must be the wallet's currency (WALLET_CURRENCY)." });
/**
 * The amount as the document describes it. The authority is the raw token check below (parseAmountToken: a plain
 * JSON integer token of at most 16 digits, at most MAX_AMOUNT_MINOR), which JSON Schema cannot express.
 */
const AMOUNT_MESSAGE = "must be a JSON integer from 1 to MAX_AMOUNT_MINOR (minor units)";
const amount = z
  .int({ error: AMOUNT_MESSAGE })
  .min(1, AMOUNT_MESSAGE)
  .meta({
    description:
      'Minor units, written as a plain JSON integer (`1e3`, `100.0` and `"100"` are refused), at most ' +
      "MAX_AMOUNT_MINOR (default 1,000,000).",
    example: 2500,
  });

const READABLE_TEXT_MESSAGE =
  "must be readable text: no control or invisible characters, no space at either end (taken exactly as sent)";
/** Who a payment pays (docs/decisions/055): a merchant or order name, free text within bounds. */
const payee = z
  .string()
  .min(1)
  .max(PAYEE_LENGTH_MAX)
  .regex(READABLE_TEXT_PATTERN, READABLE_TEXT_MESSAGE)
  .meta({
    description:
      `Optional: who is paid, a merchant or order name (1..${PAYEE_LENGTH_MAX} characters of readable text, taken ` +
      "exactly as sent). Part of the payment's parameters: the same orderId with another payee is refused with 422 " +
      "idempotency_key_reused, like another amount.",
    example: "Corner Coffee",
  });
/** The payer's note on a payment (docs/decisions/055). */
const note = z
  .string()
  .min(1)
  .max(NOTE_LENGTH_MAX)
  .regex(READABLE_TEXT_PATTERN, READABLE_TEXT_MESSAGE)
  .meta({
    description:
      `Optional: the payer's note (1..${NOTE_LENGTH_MAX} characters of readable text, taken exactly as sent). Part ` +
      "of the payment's parameters, like the payee.",
    example: "Two flat whites",
  });

/** `POST /api/v1/topups`. */
export const topupRequestSchema = z
  .strictObject({ refId, amount, currency: currency.optional() })
  .meta({ id: "TopupRequest" });
/** `POST /api/v1/payments`. */
export const paymentRequestSchema = z
  .strictObject({
    orderId: refId,
    amount,
    currency: currency.optional(),
    payee: payee.optional(),
    note: note.optional(),
  })
  .meta({ id: "PaymentRequest" });
/** `POST /api/v1/transfers` (contract section 15). */
export const transferRequestSchema = z
  .strictObject({
    refId,
    to: z.email().max(254).meta({
      description: "The recipient's email address (their account's sign-in address).",
      example: "bo@example.com",
    }),
    amount,
    currency: currency.optional(),
    note: note.optional(),
  })
  .meta({ id: "TransferRequest" });
/** `POST /api/v1/payouts` (contract section 14). */
export const payoutRequestSchema = z
  .strictObject({
    refId,
    amount,
    currency: currency.optional(),
    destination: z
      .string()
      .refine(isSandboxAccountNumber, "must be a bank account number: 10 digits, the last one a Luhn check digit")
      .meta({ description: "The bank account to pay: 10 digits, the last a Luhn check digit.", example: "4000000002" }),
  })
  .meta({ id: "PayoutRequest" });
/** The wallet page's send form: as the API's body, with a reference the server minted. */
const formTransferRequestSchema = transferRequestSchema.extend({ refId: formRefId });
/** The wallet page's withdraw form: as the API's body, with a reference the server minted. */
const formPayoutRequestSchema = payoutRequestSchema.extend({ refId: formRefId });
/** The wallet page's top-up form: as the API's body, with a reference the server minted. */
const formTopupRequestSchema = topupRequestSchema.extend({ refId: formRefId });
/** The wallet page's pay form: as the API's body, with an order id the server minted. */
const formPaymentRequestSchema = paymentRequestSchema.extend({ orderId: formRefId });
/** `POST /api/v1/rewards`. */
export const rewardRequestSchema = z
  .strictObject({
    adId: z
      .string()
      .regex(AD_ID_PATTERN, "must be 1..117 characters of A-Z a-z 0-9 . _ : -")
      .meta({ description: "The ad watched; one reward per ad per local day (contract section 6)." }),
  })
  .meta({ id: "RewardRequest" });

function describe(error: z.ZodError): string {
  return error.issues
    .map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ");
}

interface AmountRules {
  readonly maxAmountMinor: number;
  readonly walletCurrency: string;
}

function checkAmountAndCurrency(
  raw: RawMembers,
  requestedCurrency: string | undefined,
  rules: AmountRules,
): Validated<{ amountMinor: number; currency: string }> {
  const amountMinor = parseAmountToken(raw.get("amount"), rules.maxAmountMinor);
  if (amountMinor === null) {
    return { ok: false, detail: `amount: must be a JSON integer from 1 to ${rules.maxAmountMinor} (minor units)` };
  }
  const currencyCode = requestedCurrency ?? rules.walletCurrency;
  if (currencyCode !== rules.walletCurrency) {
    return { ok: false, detail: `currency: this wallet holds ${rules.walletCurrency} only` };
  }
  return { ok: true, value: { amountMinor, currency: currencyCode } };
}

/**
 * Who chose an operation's reference: an API `client` (any ref id outside the `web:` namespace), or the server
 * for its own `form` (`web:<uuid>` only; the form door also checks that it issued it, lib/web/verify-form-ref-id.ts).
 */
export type RefIdSource = "client" | "form";

/**
 * `POST /api/v1/topups` body `{ refId, amount, currency? }`, or the top-up form's fields (`source` "form").
 * Returns the validated input, or `ok: false` with a detail for `400 invalid_request` (contract sections 1, 3).
 */
export function validateTopupRequest(
  value: unknown,
  raw: RawMembers,
  rules: AmountRules,
  source: RefIdSource = "client",
): Validated<{ refId: string; amountMinor: number; currency: string }> {
  const parsed = (source === "form" ? formTopupRequestSchema : topupRequestSchema).safeParse(value);
  if (!parsed.success) return { ok: false, detail: describe(parsed.error) };
  const money = checkAmountAndCurrency(raw, parsed.data.currency, rules);
  if (!money.ok) return money;
  return { ok: true, value: { refId: parsed.data.refId, ...money.value } };
}

/** A validated payment: the order id, the amount in minor units, the currency, and the payee and note when sent. */
export interface PaymentInput {
  readonly orderId: string;
  readonly amountMinor: number;
  readonly currency: string;
  readonly payee?: string;
  readonly note?: string;
}

/**
 * `POST /api/v1/payments` body `{ orderId, amount, currency?, payee?, note? }`, or the pay form's fields (`source`
 * "form"). Returns the validated input (payee and note present only when sent), or `ok: false` with a detail for
 * `400 invalid_request` (contract sections 1, 3; docs/decisions/055 for the payee and the note).
 */
export function validatePaymentRequest(
  value: unknown,
  raw: RawMembers,
  rules: AmountRules,
  source: RefIdSource = "client",
): Validated<PaymentInput> {
  const parsed = (source === "form" ? formPaymentRequestSchema : paymentRequestSchema).safeParse(value);
  if (!parsed.success) return { ok: false, detail: describe(parsed.error) };
  const money = checkAmountAndCurrency(raw, parsed.data.currency, rules);
  if (!money.ok) return money;
  const { payee: payeeName, note: noteText } = parsed.data;
  return {
    ok: true,
    value: {
      orderId: parsed.data.orderId,
      ...money.value,
      ...(payeeName === undefined ? {} : { payee: payeeName }),
      ...(noteText === undefined ? {} : { note: noteText }),
    },
  };
}

/** A validated transfer: the reference, the recipient's address, the amount, the currency, the note when sent. */
export interface TransferInput {
  readonly refId: string;
  readonly to: string;
  readonly amountMinor: number;
  readonly currency: string;
  readonly note?: string;
}

/**
 * `POST /api/v1/transfers` body `{ refId, to, amount, currency?, note? }`, or the send form's fields (`source`
 * "form"). Returns the validated input, or `ok: false` with a detail for `400 invalid_request` (contract section 15).
 */
export function validateTransferRequest(
  value: unknown,
  raw: RawMembers,
  rules: AmountRules,
  source: RefIdSource = "client",
): Validated<TransferInput> {
  const parsed = (source === "form" ? formTransferRequestSchema : transferRequestSchema).safeParse(value);
  if (!parsed.success) return { ok: false, detail: describe(parsed.error) };
  const money = checkAmountAndCurrency(raw, parsed.data.currency, rules);
  if (!money.ok) return money;
  const { refId: ref, to, note: noteText } = parsed.data;
  return { ok: true, value: { refId: ref, to, ...money.value, ...(noteText === undefined ? {} : { note: noteText }) } };
}

/** A validated payout: the reference, the amount, the currency and the destination account. */
export interface PayoutInput {
  readonly refId: string;
  readonly amountMinor: number;
  readonly currency: string;
  readonly destination: string;
}

/**
 * `POST /api/v1/payouts` body `{ refId, amount, currency?, destination }`, or the withdraw form's fields (`source`
 * "form"). Returns the validated input, or `ok: false` with a detail for `400 invalid_request` (contract section 14).
 */
export function validatePayoutRequest(
  value: unknown,
  raw: RawMembers,
  rules: AmountRules,
  source: RefIdSource = "client",
): Validated<PayoutInput> {
  const parsed = (source === "form" ? formPayoutRequestSchema : payoutRequestSchema).safeParse(value);
  if (!parsed.success) return { ok: false, detail: describe(parsed.error) };
  const money = checkAmountAndCurrency(raw, parsed.data.currency, rules);
  if (!money.ok) return money;
  return { ok: true, value: { refId: parsed.data.refId, ...money.value, destination: parsed.data.destination } };
}

/** `POST /api/v1/rewards` body `{ adId }`. */
export function validateRewardRequest(value: unknown): Validated<{ adId: string }> {
  const parsed = rewardRequestSchema.safeParse(value);
  if (!parsed.success) return { ok: false, detail: describe(parsed.error) };
  return { ok: true, value: parsed.data };
}

/**
 * Form fields (server actions) in the same shape as a JSON body: the amount arrives as text, which must be
 * exactly the JSON integer token the API would accept. Returns the raw members map for the validators above.
 */
export function formToRaw(fields: Record<string, string>): { value: Record<string, unknown>; raw: RawMembers } {
  const raw: RawMembers = new Map();
  const value: Record<string, unknown> = {};
  for (const [name, text] of Object.entries(fields)) {
    if (name === "amount") {
      raw.set(name, text);
      value[name] = /^-?[0-9]+$/.test(text) ? Number(text) : text;
    } else {
      raw.set(name, JSON.stringify(text));
      value[name] = text;
    }
  }
  return { value, raw };
}

/** The amount rules of this deployment (MAX_AMOUNT_MINOR, WALLET_CURRENCY). */
function amountRules(): AmountRules {
  const settings = env();
  return { maxAmountMinor: settings.MAX_AMOUNT_MINOR, walletCurrency: settings.WALLET_CURRENCY };
}

/**
 * Reads a JSON body under BODY_LIMIT_BYTES and validates it with `validate` (contract sections 1 and 3): the
 * first step of every operation's route, before authentication (contract section 9, order of checks).
 * Returns the validated input, or `415`/`413`/`400` as a problem code and a detail for the client.
 */
async function readOperationInput<T>(
  request: Request,
  validate: (value: Record<string, unknown>, raw: RawMembers) => Validated<T>,
): Promise<InputOutcome<T>> {
  const body = await readJsonBody(request, env().BODY_LIMIT_BYTES);
  if (!body.ok) return body;
  const input = validate(body.value, body.raw);
  return input.ok ? input : { ok: false, code: "invalid_request", detail: input.detail };
}

/** `POST /api/v1/topups`: the body read and validated ({@link readOperationInput}, {@link validateTopupRequest}). */
export function readTopupInput(request: Request) {
  return readOperationInput(request, (value, raw) => validateTopupRequest(value, raw, amountRules()));
}

/** `POST /api/v1/payments`: the body read and validated ({@link validatePaymentRequest}). */
export function readPaymentInput(request: Request) {
  return readOperationInput(request, (value, raw) => validatePaymentRequest(value, raw, amountRules()));
}

/** `POST /api/v1/transfers`: the body read and validated ({@link validateTransferRequest}). */
export function readTransferInput(request: Request) {
  return readOperationInput(request, (value, raw) => validateTransferRequest(value, raw, amountRules()));
}

/** `POST /api/v1/payouts`: the body read and validated ({@link validatePayoutRequest}). */
export function readPayoutInput(request: Request) {
  return readOperationInput(request, (value, raw) => validatePayoutRequest(value, raw, amountRules()));
}

/** `POST /api/v1/rewards`: the body read and validated ({@link validateRewardRequest}). */
export function readRewardInput(request: Request) {
  return readOperationInput(request, (value) => validateRewardRequest(value));
}
