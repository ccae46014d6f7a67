/**
 * "No charge without room for its credit" (contract section 5, case C15): whether a credit fits under the wallet's
 * ceiling, MAX_BALANCE_MINOR (contract section 9), decided under the wallet row's lock so that two concurrent
 * operations cannot both pass on the same room.
 */
import { prepared, type Queryable, type StoredResponse } from "../ledger";
import { problemStoredResponse } from "../problems";
import { formatMinor } from "../money";

// The wallet row's lock serialises every headroom decision of a user, and every credit (the credit's upsert takes
// the same row lock), until the deciding transaction ends. $1 user_id.
const LOCK_WALLET_SQL = "SELECT balance_minor FROM wallets WHERE user_id = $1 FOR UPDATE";

// A user never credited has no wallet row yet: one with balance 0 is created so that there is a row to lock.
// $1 user_id, $2 currency.
const ENSURE_WALLET_SQL = `
INSERT INTO wallets (user_id, balance_minor, currency) VALUES ($1, 0, $2)
ON CONFLICT (user_id) DO NOTHING`;

// The user's unfinished top-ups other than $2 (null: all of them): each may still be charged and credited, so each
// holds its room until it finishes (ledger_entries_unfinished_topups_idx). Run after the lock, in its own
// statement, so its snapshot includes everything committed while this transaction waited for the lock.
// $1 user_id, $2 entry id to leave out or null.
const UNFINISHED_TOPUPS_SQL = `
SELECT COALESCE(sum(amount_minor), 0)::bigint AS unfinished_minor
  FROM ledger_entries
 WHERE user_id = $1 AND type = 'topup' AND status IN ('initiated', 'processing')
   AND ($2::bigint IS NULL OR id <> $2::bigint)`;

export interface HeadroomQuestion {
  readonly userId: string;
  /** The wallet's currency (ISO 4217), used only when the wallet row must be created. */
  readonly currency: string;
  /** The credit asked for, positive minor units. */
  readonly amountMinor: number;
  /** The top-up row asking (its own amount is `amountMinor`, not counted twice); null for other credits. */
  readonly excludeEntryId: number | null;
  /** MAX_BALANCE_MINOR. */
  readonly maxBalanceMinor: number;
}

export interface Headroom {
  /** True when `balance + amount + the other unfinished top-ups <= maxBalanceMinor`. */
  readonly fits: boolean;
  /** The wallet's balance under the lock, minor units. */
  readonly balanceMinor: number;
  /** Sum of the user's other unfinished top-ups, minor units. */
  readonly unfinishedTopupsMinor: number;
}

/**
 * Decides whether `question.amountMinor` can be credited to the user's wallet without passing
 * `question.maxBalanceMinor`, counting the user's other unfinished top-ups as already credited (contract section 5,
 * case C15). `tx` must be an open transaction: the wallet row stays locked until it ends, so the caller records its
 * decision (a top-up moved to `processing`, a reward credited, or a row failed as `balance_limit_exceeded`) in the
 * same transaction, and no other decision or credit of the user runs in between. Creates a zero-balance wallet
 * row when the user has none.
 *
 * Returns `{ fits, balanceMinor, unfinishedTopupsMinor }`. Throws database errors.
 */
export async function checkBalanceHeadroom(tx: Queryable, question: HeadroomQuestion): Promise<Headroom> {
  let locked = await tx.query<{ balance_minor: number }>(prepared("wallet_lock", LOCK_WALLET_SQL, [question.userId]));
  if (locked.rows.length === 0) {
    await tx.query(prepared("wallet_ensure", ENSURE_WALLET_SQL, [question.userId, question.currency]));
    locked = await tx.query(prepared("wallet_lock", LOCK_WALLET_SQL, [question.userId]));
  }
  const balanceMinor = Number(locked.rows[0]?.balance_minor ?? 0);
  const unfinished = await tx.query<{ unfinished_minor: number }>(
    prepared("wallet_unfinished_topups", UNFINISHED_TOPUPS_SQL, [question.userId, question.excludeEntryId]),
  );
  const unfinishedTopupsMinor = Number(unfinished.rows[0]?.unfinished_minor ?? 0);
  return {
    fits: balanceMinor + question.amountMinor + unfinishedTopupsMinor <= question.maxBalanceMinor,
    balanceMinor,
    unfinishedTopupsMinor,
  };
}

/**
 * The stored first response of an operation refused for the ceiling: `422 balance_limit_exceeded`, stored and
 * replayed like a 402 (contract sections 3 and 5). `amountMinor`, `maxBalanceMinor`: minor units of `currency`.
 */
export function balanceLimitResponse(amountMinor: number, currency: string, maxBalanceMinor: number): StoredResponse {
  return problemStoredResponse(
    "balance_limit_exceeded",
    `Crediting ${formatMinor(amountMinor)} ${currency} would take the balance over its limit of ` +
      `${formatMinor(maxBalanceMinor)} ${currency}; nothing was charged or credited.`,
  );
}
