/**
 * The one map from error codes to HTTP statuses and titles (contract section 3), and the RFC 9457
 * problem document every error body follows: `{ type, title, status, detail, code }`.
 * Pure: used by route handlers, server actions and the operations that store a problem as their first response
 * (lib/ledger itself speaks no HTTP: it stores whatever status and body it is given).
 */
import type { StoredResponse } from "./ledger";

export const PROBLEM_CODES = {
  invalid_request: { status: 400, title: "Invalid request" },
  invalid_signature: { status: 400, title: "Invalid signature" },
  unauthenticated: { status: 401, title: "Authentication required" },
  insufficient_funds: { status: 402, title: "Insufficient funds" },
  debt_outstanding: { status: 402, title: "Debt outstanding" },
  forbidden: { status: 403, title: "Forbidden" },
  not_found: { status: 404, title: "Not found" },
  method_not_allowed: { status: 405, title: "Method not allowed" },
  request_in_progress: { status: 409, title: "Request in progress" },
  token_limit_reached: { status: 409, title: "Token limit reached" },
  topup_not_refundable: { status: 409, title: "Top-up not refundable" },
  transfer_not_reversible: { status: 409, title: "Transfer not reversible" },
  payload_too_large: { status: 413, title: "Payload too large" },
  unsupported_media_type: { status: 415, title: "Unsupported media type" },
  idempotency_key_reused: { status: 422, title: "Idempotency key reused with different parameters" },
  balance_limit_exceeded: { status: 422, title: "Balance limit exceeded" },
  refund_exceeds_topup: { status: 422, title: "Refund exceeds the top-up" },
  topup_disputed: { status: 422, title: "Top-up disputed" },
  recipient_unknown: { status: 422, title: "Recipient unknown" },
  transfer_to_self: { status: 422, title: "Transfer to yourself" },
  recipient_cannot_receive: { status: 422, title: "Recipient cannot receive" },
  payout_limit_exceeded: { status: 422, title: "Daily withdrawal limit exceeded" },
  daily_cap_reached: { status: 429, title: "Daily reward cap reached" },
  rate_limited: { status: 429, title: "Too many requests" },
  internal_error: { status: 500, title: "Internal error" },
  cap_store_unavailable: { status: 503, title: "Reward cap store unavailable" },
  service_unavailable: { status: 503, title: "Service unavailable" },
} as const;

export type ProblemCode = keyof typeof PROBLEM_CODES;

/**
 * Codes whose body is a claimed row's stored first response (contract section 3), replayed byte for byte: their
 * bodies carry no request id (contract section 4). Every other problem is answered fresh and names its request.
 */
export const STORED_PROBLEM_CODES: ReadonlySet<ProblemCode> = new Set<ProblemCode>([
  "insufficient_funds",
  "balance_limit_exceeded",
  "refund_exceeds_topup",
  "topup_disputed",
  "debt_outstanding",
  "recipient_cannot_receive",
  "payout_limit_exceeded",
]);

export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: ProblemCode;
  readonly [extension: string]: unknown;
}

/** Media type of every error body (RFC 9457 section 3). */
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/**
 * Builds the problem document for `code` with a human-readable `detail` and optional extension members
 * (e.g. `fields` for idempotency_key_reused, `requestId` for internal_error). Key order is fixed, so the
 * same inputs always give the same bytes.
 */
export function problem(code: ProblemCode, detail: string, extensions: Record<string, unknown> = {}): Problem {
  const { status, title } = PROBLEM_CODES[code];
  return { type: `/problems/${code}`, title, status, detail, code, ...extensions };
}

/**
 * A problem response as an operation stores it with its row (e.g. 402 insufficient_funds, which replays like any
 * first response, contract section 3): `{ status, body }` with the problem document, and its `extensions` after the
 * standard members, as the exact body text.
 */
export function problemStoredResponse(
  code: ProblemCode,
  detail: string,
  extensions: Record<string, unknown> = {},
): StoredResponse {
  const body = problem(code, detail, extensions);
  return { status: body.status, body: JSON.stringify(body) };
}
