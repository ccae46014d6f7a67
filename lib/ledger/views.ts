/**
 * The API's JSON form of ledger rows (contract section 4). The first response of an operation is built from
 * these and stored byte for byte, so the shapes and key orders here are part of the replay contract:
 * change them only with a new API version.
 */
import type { z } from "zod";
import type { LedgerEntry, StoredResponse } from "./entry";
import type { paymentViewSchema, rewardViewSchema, statementEntryViewSchema, topupViewSchema } from "./view-schemas";

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

export function paymentView(entry: LedgerEntry): PaymentView {
  return {
    orderId: entry.refId,
    amount: entry.amountMinor,
    currency: entry.currency,
    status: entry.status,
    failureReason: entry.failureReason,
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}

export type RewardView = z.infer<typeof rewardViewSchema>;

export function rewardView(entry: LedgerEntry): RewardView {
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
