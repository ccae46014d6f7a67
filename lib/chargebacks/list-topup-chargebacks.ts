/**
 * A top-up's chargebacks for the admin's timeline page (contract section 12): the `chargeback` and
 * `chargeback_reversal` entries whose dispute was about this top-up's bank charge.
 */
import { pool } from "../db";
import { ENTRY_COLUMNS, findEntryByKey, type LedgerEntry, operationKey, toLedgerEntry } from "../ledger";

/**
 * The chargeback and chargeback-reversal entries of `(userId, topupRefId)`'s bank charge, oldest first: each keyed
 * by its dispute id (`refId`), with the amount in minor units and the entry's status. [] when the top-up does not
 * exist, has no bank charge yet, or was never disputed. One query on the user's own entries. Throws on a database
 * error.
 */
export async function listTopupChargebacks(userId: string, topupRefId: string): Promise<LedgerEntry[]> {
  const topup = await findEntryByKey(operationKey(userId, "topup", topupRefId));
  if (!topup?.bankChargeId) return [];
  const { rows } = await pool().query(
    `SELECT ${ENTRY_COLUMNS} FROM ledger_entries
      WHERE user_id = $1 AND type IN ('chargeback', 'chargeback_reversal') AND params->>'chargeId' = $2
      ORDER BY created_at, id`,
    [userId, topup.bankChargeId],
  );
  return rows.map(toLedgerEntry);
}
