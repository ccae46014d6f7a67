import { pool } from "../db";
import { env } from "../env";
import type { WalletView } from "./get-wallet";

/** `GET /api/v1/wallet?at=`'s body: the wallet's view with the instant asked for. */
export type WalletAtView = WalletView & { readonly at: string };

// One read of ledger_postings_wallet_idx (user_id, posted_at, id) INCLUDE (amount_minor, balance_after_minor),
// backwards from the instant: the newest wallet posting at or before it carries the account after it. The instant
// is compared as text PostgreSQL parses, so its microseconds count (a Date would round them to milliseconds).
const BALANCE_AT_SQL = `
SELECT balance_after_minor::text AS account, currency FROM ledger_postings
 WHERE user_id = $1 AND account = 'wallet' AND posted_at <= $2::timestamptz
 ORDER BY posted_at DESC, id DESC
 LIMIT 1`;

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
  const result = await pool().query<{ account: string; currency: string }>(BALANCE_AT_SQL, [userId, at]);
  const row = result.rows[0];
  if (!row) return { balance: 0, currency: env().WALLET_CURRENCY, at };
  // Running balances are bounded by the wallet's CHECKs (below 2^53), so the conversion is exact.
  const account = Number(row.account);
  const view: WalletAtView = { balance: Math.max(account, 0), currency: row.currency, at };
  return account < 0 ? { ...view, debt: -account } : view;
}
