/**
 * Checks a reference that came back in a wallet form submission (case C20, docs/decisions/033-form-references.md).
 * The hidden field is a claim of the browser's: the form door accepts it only when the server issued it to this
 * user's form of this type.
 */
import { retryingPool } from "../db";
import { prepared } from "../ledger";
import { type FormType, isFormRefId } from "./form-refs";

/**
 * True when `refId` is, for `userId` and `type`, the reference the form shows now, or one that a ledger entry
 * already holds (a stale tab or a resubmit after the claim, which then replays as the same operation). A stored
 * reference is only replaced once an entry holds it, so every reference a page ever showed passes; a made-up one
 * does not. Returns false without a query when `refId` does not have the minted shape (`web:<uuid>`).
 *
 * `userId` comes from the session. Throws on a database error.
 */
export async function verifyFormRefId(userId: string, type: FormType, refId: string): Promise<boolean> {
  if (!isFormRefId(refId)) return false;
  const result = await retryingPool().query<{ issued: boolean }>(
    prepared(
      "form_ref_verify",
      `SELECT EXISTS (SELECT 1 FROM form_references WHERE user_id = $1 AND type = $2 AND ref_id = $3)
           OR EXISTS (SELECT 1 FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id = $3) AS issued`,
      [userId, type, refId],
    ),
  );
  return result.rows[0]?.issued === true;
}
