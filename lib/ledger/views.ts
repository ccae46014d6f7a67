/**
 * The API's JSON form of ledger rows (contract section 4). The first response of an operation is built from
 * these and stored byte for byte, so the shapes and key orders here are part of the replay contract:
 * change them only with a new API version.
 */
import type { z } from "zod";
import type { LedgerEntry, StoredResponse } from "./entry";
import type { OperationParams } from "./fingerprint";
import { jsonResponseTemplate, type ResponseTemplate } from "./response-template";
import type {
  paymentViewSchema,
  payoutViewSchema,
  rewardViewSchema,
  statementEntryViewSchema,
  topupViewSchema,
  transferViewSchema,
} from "./view-schemas";

/** `T` of contract section 4 (its schema, the OpenAPI document's `Topup`, is in ./view-schemas.ts). */
export type TopupView = z.infer<typeof topupViewSchema>;

export function topupView(entry: LedgerEntry): TopupView {
  return {
    refId: entry.refId,
    amount: entry.amountMinor,
    currency: entry.currency,
    status: entry.status,
    failureReason: entry.failureReason,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}

export type PaymentView = z.infer<typeof paymentViewSchema>;

/** The row's fields a payment's view shows (`params` holds its payee and note when the payer gave them). */
type PaymentViewFields = Pick<
  LedgerEntry,
  "refId" | "params" | "amountMinor" | "currency" | "status" | "failureReason" | "createdAt" | "updatedAt"
>;

/** Who a payment paid and the payer's note, each present only when given (docs/decisions/055). */
export interface PaymentDetails {
  readonly payee?: string;
  readonly note?: string;
}

/**
 * The payee and the note among a row's fingerprinted parameters (`params`), each only when it is a string there:
 * rows of other types, and payments made without them, have neither.
 */
export function paymentDetailsOf(params: OperationParams): PaymentDetails {
  const { payee, note } = params;
  return {
    ...(typeof payee === "string" ? { payee } : {}),
    ...(typeof note === "string" ? { note } : {}),
  };
}

/**
 * A payment's view (contract section 4): `orderId`, then `payee` and `note` only when the payment has them (so a
 * payment made without them keeps the exact bytes it always had), then the movement's fields.
 */
export function paymentView(entry: PaymentViewFields): PaymentView {
  return {
    orderId: entry.refId,
    ...paymentDetailsOf(entry.params),
    amount: entry.amountMinor,
    currency: entry.currency,
    status: entry.status,
    failureReason: entry.failureReason,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}

/**
 * The stored 201 of a payment decided in one statement, before the statement runs: `{ payment: PaymentView }` of
 * a `succeeded` row for `orderId`, `amountMinor` (minor units), `currency` and the payee and note in `details`
 * (none by default), its timestamps (`payment.createdAt`, `payment.updatedAt`) left as slots for the statement to
 * fill with the row's time (payment-statement.ts). Filled, it is byte for byte
 * `jsonStoredResponse(201, { payment: paymentView(row) })`.
 */
export function succeededPaymentResponse(
  orderId: string,
  amountMinor: number,
  currency: string,
  details: PaymentDetails = {},
): ResponseTemplate {
  const time = new Date(0);
  const view = paymentView({
    refId: orderId,
    params: { ...details },
    amountMinor,
    currency,
    status: "succeeded",
    failureReason: null,
    createdAt: time,
    updatedAt: time,
  });
  return jsonResponseTemplate(201, (time) => ({ payment: { ...view, createdAt: time, updatedAt: time } }));
}

export type RewardView = z.infer<typeof rewardViewSchema>;

/** The row's fields a reward's view shows (`params` holds its `adId` and `day`). */
type RewardViewFields = Pick<LedgerEntry, "params" | "amountMinor" | "currency" | "status" | "createdAt" | "updatedAt">;

export function rewardView(entry: RewardViewFields): RewardView {
  return {
    adId: String(entry.params.adId),
    day: String(entry.params.day),
    amount: entry.amountMinor,
    currency: entry.currency,
    status: entry.status,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}

/**
 * The stored 201 of a reward decided in one statement, before the statement runs: `{ reward: RewardView }` of a
 * `succeeded` row with `params` (its `adId` and `day`), `amountMinor` (minor units) and `currency`, its timestamps
 * (`reward.createdAt`, `reward.updatedAt`) left as slots for the statement to fill with the row's time
 * (reward-statement.ts). Filled, it is byte for byte `jsonStoredResponse(201, { reward: rewardView(row) })`.
 */
export function succeededRewardResponse(
  params: OperationParams,
  amountMinor: number,
  currency: string,
): ResponseTemplate {
  const time = new Date(0);
  const view = rewardView({ params, amountMinor, currency, status: "succeeded", createdAt: time, updatedAt: time });
  return jsonResponseTemplate(201, (time) => ({ reward: { ...view, createdAt: time, updatedAt: time } }));
}

/** One line of the statement (`GET /api/v1/entries`): every movement, credits positive and debits negative. */
export type StatementEntryView = z.infer<typeof statementEntryViewSchema>;

export function statementEntryView(entry: LedgerEntry): StatementEntryView {
  return {
    type: entry.type,
    refId: entry.refId,
    amount: entry.amountMinor,
    currency: entry.currency,
    status: entry.status,
    failureReason: entry.failureReason,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}

/** A JSON success response as stored: `status` and the exact body text. */
export function jsonStoredResponse(status: number, value: unknown): StoredResponse {
  return { status, body: JSON.stringify(value) };
}

export type TransferView = z.infer<typeof transferViewSchema>;

/** A transfer's view (contract section 15): its `to` and, when given, `note` come from the row's parameters. */
export function transferView(
  entry: Pick<
    LedgerEntry,
    "refId" | "params" | "amountMinor" | "currency" | "status" | "failureReason" | "createdAt" | "updatedAt"
  >,
): TransferView {
  const { note } = entry.params;
  return {
    refId: entry.refId,
    to: String(entry.params.to),
    ...(typeof note === "string" ? { note } : {}),
    amount: entry.amountMinor,
    currency: entry.currency,
    status: entry.status,
    failureReason: entry.failureReason,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}

/**
 * The stored 201 of a transfer decided in one statement (transfer-statement.ts), before the statement runs: the view
 * of a `succeeded` row, its timestamps left as slots for the statement to fill with the row's time.
 */
export function succeededTransferResponse(
  refId: string,
  amountMinor: number,
  currency: string,
  params: OperationParams,
): ResponseTemplate {
  const time = new Date(0);
  const view = transferView({
    refId,
    params,
    amountMinor,
    currency,
    status: "succeeded",
    failureReason: null,
    createdAt: time,
    updatedAt: time,
  });
  return jsonResponseTemplate(201, (slot) => ({ transfer: { ...view, createdAt: slot, updatedAt: slot } }));
}

export type PayoutView = z.infer<typeof payoutViewSchema>;

/** A payout's view (contract section 14): its destination from the row's parameters. */
export function payoutView(entry: LedgerEntry): PayoutView {
  return {
    refId: entry.refId,
    destination: String(entry.params.destination),
    amount: entry.amountMinor,
    currency: entry.currency,
    status: entry.status,
    failureReason: entry.failureReason,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}
