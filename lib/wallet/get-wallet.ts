import { z } from "zod";
import { pool } from "../db";
import { env } from "../env";
import { prepared } from "../ledger";

/** `GET /api/v1/wallet` (contract section 4), and with `?at=` (section 13.4); the OpenAPI document's `Wallet`. */
export const walletViewSchema = z
  .strictObject({
    balance: z.int().min(0).meta({ description: "Integer minor units." }),
    currency: z.string().regex(/^[A-Z]{3}$/),
    debt: z.int().min(1).optional().meta({
      description:
        "Integer minor units a chargeback took that the balance could not cover; present only while a debt is open. Credits repay it first; payments are refused with 402 debt_outstanding meanwhile.",
    }),
    held: z
      .int()
      .min(1)
      .optional()
      .meta({
        description:
          "Integer minor units held for withdrawals the bank has not answered yet (contract section 14): not in " +
          "`balance`, given back if the bank fails one; present only while a withdrawal is unfinished.",
      }),
    at: z
      .string()
      .optional()
      .meta({
        description:
          "Present only when asked with `?at=`: the instant, exactly as sent; `balance` and `debt` are then those after " +
          "every posting to the wallet account at or before it (contract section 13.4).",
      }),
  })
  .meta({ id: "Wallet" });
export type WalletView = z.infer<typeof walletViewSchema>;

// The wallet and what its unfinished payouts hold, in one read: the sum is served by the partial index of unfinished
// give-backs, and a payout is claimed under the wallet's lock, so a wallet without a row holds nothing.
const WALLET_SQL = `
SELECT w.balance_minor::text AS balance_minor, w.debt_minor::text AS debt_minor, w.currency,
       (SELECT COALESCE(SUM(e.amount_minor), 0) FROM ledger_entries e
         WHERE e.user_id = w.user_id AND e.type = 'payout' AND e.status IN ('initiated', 'processing'))::text AS held_minor
  FROM wallets w
 WHERE w.user_id = $1`;

/**
 * The caller's available balance (contract section 4: `GET /api/v1/wallet`), the open debt when there is one
 * (section 11) and the amount held for unfinished withdrawals when there is one (section 14). A user who has never
 * been credited has no wallet row yet: the balance is 0 in the wallet currency. Throws database errors.
 */
export async function getWallet(userId: string): Promise<WalletView> {
  const result = await pool().query<{
    balance_minor: string;
    debt_minor: string;
    currency: string;
    held_minor: string;
  }>(prepared("wallet_with_held", WALLET_SQL, [userId]));
  const wallet = result.rows[0];
  if (!wallet) return { balance: 0, currency: env().WALLET_CURRENCY };
  // balance_minor and debt_minor are CHECKed below 2^53, and a user's unfinished payouts are bounded by the balance
  // they were held from, so the conversions are exact.
  const debt = Number(wallet.debt_minor);
  const held = Number(wallet.held_minor);
  return {
    balance: Number(wallet.balance_minor),
    currency: wallet.currency,
    ...(debt > 0 ? { debt } : {}),
    ...(held > 0 ? { held } : {}),
  };
}
