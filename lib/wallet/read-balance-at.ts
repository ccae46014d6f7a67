import { pool } from "../db";
import { env } from "../env";
import type { WalletView } from "./get-wallet";
import { WALLET_ACCOUNT_AT_SQL } from "./statement-posting";

/** `GET /api/v1/wallet?at=`'s body: the wallet's view with the instant asked for. */
export type WalletAtView = WalletView & { readonly at: string };

/**
 * The caller's balance and debt at the instant `at` (ISO-8601 text with an offset, validated and bounded by the
 * route: `walletQuerySchema` in lib/http/list-query.ts), as contract section 13.2 defines it: the running balance of
 * the newest posting to the user's wallet account at or before `at` (a posting made exactly at `at` counts), split
 * into `balance` (the account when not below zero) and `debt` (minus the account, present only when above zero),
 * like `GET /api/v1/wallet` (decision 058: a debt is a negative account). Before the first posting: 0 in the wallet
 * currency. An instant just ahead of the server's clock answers what is booked so far.
 *
 * Returns the view with `at` echoed. Throws database errors (an `at` PostgreSQL cannot read is a bug of the caller's
 * validation).
 */
export async function readBalanceAt(userId: string, at: string): Promise<WalletAtView> {
  const result = await pool().query<{ account: string; currency: string }>(WALLET_ACCOUNT_AT_SQL, [userId, at]);
  const row = result.rows[0];
  if (!row) return { balance: 0, currency: env().WALLET_CURRENCY, at };
  // Running balances are bounded by the wallet's CHECKs (below 2^53), so the conversion is exact.
  const account = Number(row.account);
  const view: WalletAtView = { balance: Math.max(account, 0), currency: row.currency, at };
  return account < 0 ? { ...view, debt: -account } : view;
}
