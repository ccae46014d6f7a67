import { findEntryByKey, operationKey, topupView, type TopupView } from "../ledger";

/**
 * The current state of the caller's top-up `refId` (contract section 4: `GET /api/v1/topups/{refId}`).
 * `userId` comes from authentication; another user's refId is simply not found (404, no existence leak).
 * Returns null when absent.
 */
export async function getTopup(userId: string, refId: string): Promise<TopupView | null> {
  const entry = await findEntryByKey(operationKey(userId, "topup", refId));
  return entry ? topupView(entry) : null;
}
