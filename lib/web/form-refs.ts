/**
 * Server-minted ref ids for the wallet page's forms (issue 2 item 8). A form's ref id is the next one in the
 * user's sequence of that type, so every render until the operation is claimed shows the same id: a
 * resubmit, a double click, or the same form open in two tabs is the same operation, and the ledger
 * absorbs the duplicates. Once the claim exists, the count moves on and the next render gets a new id.
 */
import { pool } from "../db";
import type { LedgerType } from "../ledger/keys";

const PREFIX: Record<Extract<LedgerType, "topup" | "payment">, string> = { topup: "web-topup-", payment: "web-order-" };

/** The ref id the next form of `type` should carry for `userId` (e.g. `web-topup-7`). */
export async function nextFormRefId(userId: string, type: "topup" | "payment"): Promise<string> {
  const result = await pool().query<{ n: number }>(
    "SELECT count(*)::int AS n FROM ledger_entries WHERE user_id = $1 AND type = $2 AND ref_id LIKE $3",
    [userId, type, `${PREFIX[type]}%`],
  );
  return `${PREFIX[type]}${(result.rows[0]?.n ?? 0) + 1}`;
}

/**
 * Parses an amount typed in major units ("25", "25.5", "25.50") into integer minor units with two decimals,
 * exactly (no floating point). Returns null for anything else, including 0 and more than two decimals.
 */
export function parseMajorAmount(text: string): number | null {
  const match = /^(0|[1-9][0-9]{0,9})(?:\.([0-9]{1,2}))?$/.exec(text.trim());
  if (!match) return null;
  const minor = Number(match[1]) * 100 + Number((match[2] ?? "").padEnd(2, "0"));
  return minor > 0 ? minor : null;
}
