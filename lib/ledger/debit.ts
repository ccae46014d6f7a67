/**
 * The conditional debit of a payment (contract section 8: the debit itself decides insufficient funds, never a
 * read before it). Beside the claim that must precede it: the debit runs only on a row this request claimed.
 */
import { prepared, type Queryable } from "./queryable";

// No row back means the balance did not cover the amount at the moment of the update, or a debt is open (contract
// section 12: payments wait until credits have repaid it). The balance CHECK is only the last line of defence.
// $1 user_id, $2 amount (minor units).
const DEBIT_SQL = `
UPDATE wallets SET balance_minor = balance_minor - $2, updated_at = now()
 WHERE user_id = $1 AND balance_minor >= $2 AND debt_minor = 0
RETURNING balance_minor`;

/**
 * Debits `amountMinor` (minor units) from `userId`'s wallet on `db` (the payment's transaction) if the balance
 * covers it and no debt is open, in one conditional UPDATE (contract section 8: the debit itself decides).
 * Returns the new balance in minor units, or null when the balance was short, a debt is open (contract section 12)
 * or the user has no wallet.
 * Throws database errors as they come.
 */
export async function debitWallet(db: Queryable, userId: string, amountMinor: number): Promise<number | null> {
  const debited = await db.query<{ balance_minor: number }>(
    prepared("payment_debit", DEBIT_SQL, [userId, amountMinor]),
  );
  return debited.rows[0]?.balance_minor ?? null;
}
