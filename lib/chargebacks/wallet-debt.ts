/**
 * A wallet's open debt (contract section 12): what chargebacks took that the balance could not cover.
 */
import { prepared, type Queryable } from "../ledger";

const SELECT_DEBT_SQL = "SELECT debt_minor FROM wallets WHERE user_id = $1";

/**
 * The debt of `userId`'s wallet in minor units, read on `db` (a payment's transaction, after its debit was refused);
 * 0 when the user has no wallet. Throws database errors.
 */
export async function openDebtMinor(db: Queryable, userId: string): Promise<number> {
  const result = await db.query<{ debt_minor: number }>(prepared("wallet_debt", SELECT_DEBT_SQL, [userId]));
  return result.rows[0]?.debt_minor ?? 0;
}
