/**
 * Open disputes for the admin page (contract section 12): the bank's disputes, changed within the look-back window,
 * that it has not closed yet. The bank is the record of disputes; the ledger only holds the money they moved.
 */
import type { BankCallOptions } from "../bank/client";
import { listDisputesSince, type BankDispute } from "../bank/disputes";

/** How far back the admin page looks: 30 days, longer than card networks give a dispute to be decided in most cases. */
export const OPEN_DISPUTES_LOOK_BACK_MS = 30 * 24 * 60 * 60 * 1000;
/** Pages read at most (1000 disputes each): a bounded bank read per page view. */
const PAGES_MAX = 5;

export type OpenDisputes =
  | { readonly kind: "listed"; readonly disputes: readonly BankDispute[]; readonly truncated: boolean }
  | { readonly kind: "bank_unavailable"; readonly reason: string };

/**
 * The open disputes changed in the last `lookBackMs` (default 30 days), oldest change first, from at most 5 pages
 * of the bank's listing (`truncated` when more were left). Returns `bank_unavailable` with the reason when the bank
 * could not be read. Throws only for invalid options (a bug).
 */
export async function listOpenDisputes(
  bank: BankCallOptions,
  lookBackMs: number = OPEN_DISPUTES_LOOK_BACK_MS,
): Promise<OpenDisputes> {
  const open: BankDispute[] = [];
  let since = new Date(Date.now() - lookBackMs).toISOString();
  for (let page = 0; page < PAGES_MAX; page++) {
    const listed = await listDisputesSince(since, { ...bank, limit: 1000 });
    if (listed.kind === "unknown") return { kind: "bank_unavailable", reason: listed.reason };
    if (listed.kind === "rejected") return { kind: "bank_unavailable", reason: `${listed.status} ${listed.code}` };
    open.push(...listed.disputes.filter((d) => d.status === "open"));
    if (!listed.hasMore) return { kind: "listed", disputes: open, truncated: false };
    since = listed.nextCursor;
  }
  return { kind: "listed", disputes: open, truncated: true };
}
