import { findEntryByKey, operationKey, payoutView, type PayoutView } from "../ledger";

/**
 * The current state of the caller's payout `refId` (contract section 14: `GET /api/v1/payouts/{refId}`), for the
 * page's live status and a client polling an outcome still unknown. `userId` comes from authentication; another
 * user's refId is simply not found (404, no existence leak). Returns null when absent.
 */
export async function getPayout(userId: string, refId: string): Promise<PayoutView | null> {
  const entry = await findEntryByKey(operationKey(userId, "payout", refId));
  return entry ? payoutView(entry) : null;
}
