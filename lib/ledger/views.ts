/**
 * The API's JSON form of ledger rows (contract section 4). The first response of an operation is built from
 * these and stored byte for byte, so the shapes and key orders here are part of the replay contract:
 * change them only with a new API version.
 */
import type { LedgerEntry, StoredResponse } from "./entry";
import { problem, type ProblemCode } from "../problems";

/** `T` of contract section 4. */
export interface TopupView {
  refId: string;
  amount: number;
  currency: string;
  status: LedgerEntry["status"];
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
}

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

export interface PaymentView {
  orderId: string;
  amount: number;
  currency: string;
  status: LedgerEntry["status"];
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
}

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

export interface RewardView {
  adId: string;
  day: string;
  amount: number;
  currency: string;
  status: LedgerEntry["status"];
  createdAt: string;
  updatedAt: string;
}

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
export interface StatementEntryView {
  type: LedgerEntry["type"];
  refId: string;
  amount: number;
  currency: string;
  status: LedgerEntry["status"];
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
}

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

/** A problem response as stored (e.g. 402 insufficient_funds, which replays like any first response). */
export function problemStoredResponse(code: ProblemCode, detail: string): StoredResponse {
  const body = problem(code, detail);
  return { status: body.status, body: JSON.stringify(body) };
}
