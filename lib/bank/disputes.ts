/**
 * The app's client for the bank's disputes (contract section 12; docs/bank-sandbox.md, "Disputes"):
 * `GET /disputes/{id}` (the bank's word on one dispute, asked before any money moves) and
 * `GET /disputes?since=` (the reconciler's listing). Outcomes follow lib/bank/client.ts: `unknown` means the bank
 * could not be read and nothing may be concluded.
 */
import { z } from "zod";
import {
  badResponse,
  call,
  classifyStatus,
  type BankCallOptions,
  type RejectedOutcome,
  type UnknownOutcome,
} from "./client";

export type DisputeStatus = "open" | "lost" | "won";

/** A dispute as the bank reports it. `amount` in minor units; times ISO-8601 UTC. */
export interface BankDispute {
  id: string;
  chargeId: string;
  merchantRef: string;
  amount: number;
  currency: string;
  status: DisputeStatus;
  openedAt: string;
  /** When the dispute was lost; kept when it is later reversed (status `won` with `lostAt` set). */
  lostAt: string | null;
  closedAt: string | null;
  updatedAt: string;
}

const disputeSchema = z.object({
  id: z.string().min(1).max(200),
  chargeId: z.string().min(1).max(200),
  merchantRef: z.string().min(1).max(400),
  amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  currency: z.string().regex(/^[A-Z]{3}$/),
  status: z.enum(["open", "lost", "won"]),
  openedAt: z.string(),
  lostAt: z.string().nullable(),
  closedAt: z.string().nullable(),
  updatedAt: z.string(),
});
const pageSchema = z.object({
  disputes: z.array(disputeSchema),
  hasMore: z.boolean(),
  nextCursor: z.string().min(1).max(100),
});

export type GetDisputeResult =
  | { kind: "found"; dispute: BankDispute }
  | { kind: "not_found" }
  | UnknownOutcome
  | RejectedOutcome;
export type ListDisputesResult =
  | { kind: "page"; disputes: BankDispute[]; hasMore: boolean; nextCursor: string }
  | UnknownOutcome
  | RejectedOutcome;

/**
 * Asks the bank for one dispute: `GET /disputes/{id}`.
 *
 * @param disputeId the bank's dispute id (a path segment: only `[A-Za-z0-9._:-]` reaches this call).
 * @returns `found` (with the dispute as the bank has it now), `not_found`, `rejected`, or `unknown`.
 * @throws only for invalid options (a bug).
 */
export async function getDispute(disputeId: string, options: BankCallOptions): Promise<GetDisputeResult> {
  const raw = await call(options, "GET", `disputes/${encodeURIComponent(disputeId)}`);
  if (raw.kind === "unknown") return raw;
  if (raw.status === 404) return { kind: "not_found" };
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = disputeSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("dispute body does not match the protocol");
  if (parsed.data.id !== disputeId) return badResponse("dispute with another id");
  return { kind: "found", dispute: parsed.data };
}

/**
 * One page of disputes changed since `since` (an ISO-8601 time with offset, or the `nextCursor` of an earlier
 * page): `GET /disputes?since=&limit=`, in the bank's change order. Repeat with `nextCursor` while `hasMore`.
 *
 * @returns `page`, `rejected` (e.g. 400 for a bad `since`), or `unknown`.
 * @throws only for invalid options (a bug).
 */
export async function listDisputesSince(
  since: string,
  options: BankCallOptions & { limit?: number },
): Promise<ListDisputesResult> {
  const query = new URLSearchParams({ since });
  if (options.limit !== undefined) query.set("limit", String(options.limit));
  const raw = await call(options, "GET", `disputes?${query.toString()}`);
  if (raw.kind === "unknown") return raw;
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = pageSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("dispute page does not match the protocol");
  return { kind: "page", ...parsed.data };
}
