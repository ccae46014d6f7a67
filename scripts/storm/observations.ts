/**
 * What the storm's clients saw: every operation they started and every HTTP attempt they made for it. The checks
 * (./client-checks.ts) compare this with the ledger and the bank at the end; the summary counts it.
 */
import { PROBLEM_CODES, type ProblemCode, STORED_PROBLEM_CODES } from "../../lib/problems";
import type { ResponseBody } from "../lib/api-types";
import type { HttpOutcome } from "./http-client";

/**
 * The kinds of money movement the storm's clients start, as the API's routes name them: the users' three, and the
 * admin's refunds (contract section 11).
 */
export type OperationKind = "topup" | "reward" | "payment" | "refund" | "payout" | "transfer";

/**
 * A transfer the server must refuse before claiming anything (contract section 15): to an address with no account
 * (`422 recipient_unknown`, or `429 rate_limited` once the sender named too many) or to the sender's own address
 * (`422 transfer_to_self`).
 */
export type RefusedTransfer = "recipient_unknown" | "transfer_to_self";

/**
 * Why the admin sent a refund that must be refused (contract section 11): `above_topup` asks for more than the whole
 * top-up; `after_full` asks for 1.00 more after a full refund of the same top-up (`fullRefundId`), refused whenever
 * that full refund holds (its row succeeded).
 */
export type OverRefund =
  | { readonly kind: "above_topup" }
  | { readonly kind: "after_full"; readonly fullRefundId: string };

/**
 * How the clients duplicate an operation (realistic duplication):
 * - `single`: sent once (retried only after a timeout, a dropped connection, 409 or 5xx, like any good client);
 * - `double_submit`: two identical requests to the same instance a few ms apart (a double click);
 * - `two_tabs`: two identical requests at once, one to each instance (two tabs behind a load balancer);
 * - `timeout_retry`: the first attempt gives up after 30-250 ms, well before the server can answer a top-up,
 *   and the retry goes to the other instance while the first may still be running;
 * - `late_replay`: after the operation's answer, the same request once more on the other instance (a retry
 *   after a lost answer, a page reload);
 * - `mismatch_probe`: after the answer, the same key with another amount (a client bug): must be refused (422)
 *   and must change nothing.
 */
export type DuplicationPattern =
  | "single"
  | "double_submit"
  | "two_tabs"
  | "timeout_retry"
  | "late_replay"
  | "mismatch_probe";

/** One HTTP request of an operation. */
export interface AttemptRecord {
  /** Index of the app instance it was sent to. */
  readonly instance: number;
  readonly outcome: HttpOutcome;
  /** Milliseconds since the epoch when it was sent. */
  readonly sentAtMs: number;
  readonly durationMs: number;
  /** True for a mismatch probe's request (other amount, same key). */
  readonly probe: boolean;
}

/** One operation a simulated user started, and everything sent for it. */
export interface OperationRecord {
  readonly kind: OperationKind;
  /** The user whose ledger the operation addresses (for a refund: the top-up's owner, not the admin). */
  readonly userIndex: number;
  readonly userId: string;
  /** The refId (top-ups, payouts, transfers), orderId (payments), adId (rewards) or refundId (refunds) the client chose. */
  readonly ident: string;
  /** Refunds only: the refId of the top-up refunded. */
  readonly topupRefId?: string;
  /** Refunds only: set when the refund is an over-refund attempt that must be refused. */
  readonly overRefund?: OverRefund;
  /** Transfers only: the recipient's address as sent. */
  readonly to?: string;
  /** Transfers only: set when the transfer must be refused, and why. */
  readonly refusedTransfer?: RefusedTransfer;
  /** Amount in minor units the client sent (null for rewards: the server decides). */
  readonly amountMinor: number | null;
  readonly pattern: DuplicationPattern;
  readonly attempts: AttemptRecord[];
}

/** Running totals for the progress bar. */
export interface TrafficCounters {
  operations: number;
  requests: number;
  responses: number;
  failures: number;
}

/**
 * Answers a client treats as final for an operation: a stored answer (2xx, 402) or a refusal that will not change.
 * A 409 is retried only when it is `request_in_progress`; `409 topup_not_refundable` (a refund of a top-up that did
 * not succeed, contract section 11) is final.
 */
export function isFinalAnswer(answer: { readonly status: number; readonly body: string }): boolean {
  if (answer.status >= 500) return false;
  if (answer.status !== 409) return true;
  return (parseJson(answer.body) as { code?: unknown } | undefined)?.code !== "request_in_progress";
}

/**
 * True for answers the server stores and replays (contract section 3): 2xx, and the problems whose code is a stored
 * outcome of a claimed row (`402 insufficient_funds`, `422 balance_limit_exceeded`: lib/problems.ts). Decided by the
 * problem's `code`, never by the status alone: a 422 is also `idempotency_key_reused`, which is not stored.
 */
export function isStoredAnswer(answer: { readonly status: number; readonly body: string }): boolean {
  if (answer.status >= 200 && answer.status < 300) return true;
  return storedProblemCode(answer) !== null;
}

/** The answer's problem `code` when it is a stored outcome with its own status (lib/problems.ts), else null. */
export function storedProblemCode(answer: { readonly status: number; readonly body: string }): ProblemCode | null {
  const code = (parseJson(answer.body) as { code?: unknown } | undefined)?.code;
  if (typeof code !== "string" || !(code in PROBLEM_CODES)) return null;
  const known = code as ProblemCode;
  return STORED_PROBLEM_CODES.has(known) && PROBLEM_CODES[known].status === answer.status ? known : null;
}

/** The UTC calendar date of `ms` (REWARD_TZ is UTC in the storm), `YYYY-MM-DD`. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * The ledger ref_id an attempt addressed: the ident itself for top-ups and payments; `<adId>:<day>` for rewards,
 * with the day taken from a 2xx answer's `reward.day` when there is one (the server's clock decides it), else
 * the UTC date when the request was sent.
 */
export function ledgerRefId(operation: OperationRecord, attempt: AttemptRecord): string {
  if (operation.kind !== "reward") return operation.ident;
  if (attempt.outcome.kind === "response" && attempt.outcome.status >= 200 && attempt.outcome.status < 300) {
    const day = (parseJson(attempt.outcome.body) as ResponseBody<"/api/v1/rewards", "post", 201> | undefined)?.reward
      ?.day;
    if (typeof day === "string") return `${operation.ident}:${day}`;
  }
  return `${operation.ident}:${utcDay(attempt.sentAtMs)}`;
}

/** `user|type|ref` of an attempt: the ledger key (contract section 1) it addressed. */
export function attemptKey(operation: OperationRecord, attempt: AttemptRecord): string {
  return `${operation.userId}|${operation.kind}|${ledgerRefId(operation, attempt)}`;
}

/**
 * JSON.parse that returns undefined instead of throwing. Callers say which answer they expect with the types of the
 * OpenAPI document (scripts/lib/api-types.ts), so a change of the API breaks them at compile time.
 */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
