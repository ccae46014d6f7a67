/**
 * The one builder of a top-up's stored first response (contract sections 3 and 4): 201 `{ topup: T }` with the
 * status known at that moment. The request stores it when it answers; the reconciler stores it for a row whose
 * request is gone, so that a retry of the original request replays instead of waiting (case C12). Whoever stores
 * first wins (`storeResponse`), so every door builds the same bytes from the same row.
 */
import {
  isTerminal,
  jsonResponseTemplate,
  jsonStoredResponse,
  storeResponse,
  topupView,
  type LedgerEntry,
  type ResponseTemplate,
  type StoredResponse,
} from "../ledger";

/** The stored first response for `entry` (a top-up row) as it is now. Pure. */
export function topupResponse(entry: LedgerEntry): StoredResponse {
  return jsonStoredResponse(201, { topup: topupView(entry) });
}

/**
 * {@link topupResponse} of `entry` as a write of the row will leave it: its `topup.updatedAt` the template's slot, for
 * the statement that writes the row to fill with the row's new time (lib/ledger `attachChargeAndRespond`). Filled, it
 * is byte for byte `topupResponse` of the row the statement returns.
 */
export function topupResponseOnWrite(entry: LedgerEntry): ResponseTemplate {
  return jsonResponseTemplate(201, (time) => ({ topup: { ...topupView(entry), updatedAt: time } }));
}

/**
 * Stores {@link topupResponse} for a finished top-up that has none yet, first writer wins. Returns true when this
 * call stored it; false when the row is unfinished or already had a response (the earlier one stays, byte for
 * byte). Throws database errors.
 */
export async function storeFinishedTopupResponse(entry: LedgerEntry): Promise<boolean> {
  if (!isTerminal(entry.status) || entry.response !== null) return false;
  const stored = await storeResponse({ userId: entry.userId, entryId: entry.id }, topupResponse(entry));
  return stored.stored;
}
