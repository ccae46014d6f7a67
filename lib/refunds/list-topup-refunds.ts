/** A top-up's refunds for its pages (contract section 11): the admin's timeline page and the user's statement. */
import { findEntryByKey, listRefundsOf, operationKey } from "../ledger";
import { refundView } from "./settle-refund";

/** The refunds of `(userId, topupRefId)`, oldest first, as the API shows them; [] when the top-up has none. */
export async function listTopupRefunds(userId: string, topupRefId: string): Promise<ReturnType<typeof refundView>[]> {
  const topup = await findEntryByKey(operationKey(userId, "topup", topupRefId));
  if (!topup) return [];
  return (await listRefundsOf(topup)).map(refundView);
}
