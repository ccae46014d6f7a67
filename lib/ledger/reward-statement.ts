/**
 * A reward decided in one round trip under the wallet's lock (contract sections 1, 3, 5 and 6): one call of a
 * PL/pgSQL function that locks the wallet row, sums the money that may still reach it, then claims the row terminal,
 * counts the day's cap row, credits the wallet and writes the audit rows and the stored first response in one
 * statement (docs/decisions/047).
 */
import { classifyDbError } from "./db-errors";
import { decidedFromRow } from "./decided-claim";
import { ENTRY_COLUMNS, type LedgerEntry, type StoredResponse } from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";
import type { ResponseTemplate } from "./response-template";

/**
 * The constraint name the function's cap refusal carries, with SQLSTATE 23514 (check_violation): the day's credited
 * total would pass the cap. prisma/functions/ledger_decide_reward.sql names it literally.
 */
export const REWARD_CAP_CONSTRAINT = "reward_cap_days_within_cap";

// One call of the database function ledger_decide_reward (its file, prisma/functions/ledger_decide_reward.sql, says
// what each part does and why), arguments by name: the day's cap is in minor units (null: the day's row is not
// counted); the success body is the template's segments, the refusal's body stored as given.
const DECIDE_REWARD_SQL = `SELECT ${ENTRY_COLUMNS}, credited_today_minor
  FROM (SELECT (r.entry).*, r.credited_today_minor
          FROM ledger_decide_reward(
                 p_user_id => $1, p_ref_id => $2, p_amount_minor => $3::bigint, p_currency => $4, p_fingerprint => $5,
                 p_params => $6::jsonb, p_day => $7, p_cap_minor => $8::bigint, p_max_balance_minor => $9::bigint,
                 p_succeeded_status => $10::smallint, p_succeeded_body => $11::text[],
                 p_refusal_status => $12::smallint, p_refusal_body => $13) AS r) AS decided`;

export interface RewardDecisionRequest {
  /** A `reward` key. */
  readonly key: OperationKey;
  /** Positive integer in minor units of `currency`. */
  readonly amountMinor: number;
  /** ISO 4217 code; also the currency of a wallet row the statement creates. */
  readonly currency: string;
  /** The fingerprinted parameters. */
  readonly params: OperationParams;
  /** The reward's day (`YYYY-MM-DD` in REWARD_TZ): its row in `reward_cap_days`. */
  readonly day: string;
  /**
   * REWARD_DAILY_CAP_MINOR: the day's credited total may not pass it (contract section 6). Null leaves the day's row
   * alone; it exists only for the negative control of tests/integration/rewards-cap-ledger.test.ts.
   */
  readonly capMinor: number | null;
  /** MAX_BALANCE_MINOR (contract section 9). */
  readonly maxBalanceMinor: number;
  /** 201 with the reward's view, its timestamps the template's slots (views.ts `succeededRewardResponse`). */
  readonly succeeded: ResponseTemplate;
  /** The 422 balance_limit_exceeded problem, stored as given. */
  readonly refusal: StoredResponse;
}

/**
 * A reward this statement claimed: the row is terminal (`succeeded`, credited; or `failed` for
 * balance_limit_exceeded), `response` its stored first response. `creditedTodayMinor` is the day's total with this
 * credit, null when nothing was counted (no room, or `capMinor` null).
 */
export interface DecidedReward {
  readonly kind: "decided";
  readonly entry: LedgerEntry;
  readonly response: StoredResponse;
  readonly creditedTodayMinor: number | null;
}

/** What {@link decideRewardUnderWalletLock} found. */
export type RewardDecision =
  | DecidedReward
  /** The day's cap would be passed: the statement rolled back, nothing was written (contract section 3). */
  | { readonly kind: "over_cap" }
  /** The key already had a row (also a unique violation of the claim index itself, contract section 8). */
  | { readonly kind: "lost" };

/**
 * Claims `request.key` and decides the reward in one statement on `db` (a pool or client in autocommit, where the
 * statement commits by itself: once sent, the caller must treat it as possibly committed; or a client inside a READ
 * COMMITTED transaction that the caller commits).
 *
 * Room first: `balance + amountMinor + the pending credits <= maxBalanceMinor` (unfinished top-ups and refunds,
 * chargebacks not reversed: the SQL function ledger_pending_credits_minor) under the wallet's lock
 * (contract section 5, case C15); without room the row is born `failed` with `request.refusal` stored and nothing
 * counted or credited. With room the day's cap row is raised (unless `capMinor` is null), the wallet credited (a
 * debt repaid first, contract section 12) and the row born `succeeded` with `request.succeeded` stored, its time
 * filled in.
 *
 * Returns `decided`, `over_cap` (the day's row refused: nothing written) or `lost`. Throws other database errors as
 * they come.
 */
export async function decideRewardUnderWalletLock(
  db: Queryable,
  request: RewardDecisionRequest,
): Promise<RewardDecision> {
  const { key } = request;
  if (key.type !== "reward") throw new Error(`decideRewardUnderWalletLock: a ${key.type} key is not a reward`);
  let row: Record<string, unknown> | undefined;
  try {
    const result = await db.query(
      prepared("ledger_decide_reward", DECIDE_REWARD_SQL, [
        key.userId,
        key.refId,
        request.amountMinor,
        request.currency,
        fingerprint(key.type, request.params),
        JSON.stringify(request.params),
        request.day,
        request.capMinor,
        request.maxBalanceMinor,
        request.succeeded.status,
        request.succeeded.segments,
        request.refusal.status,
        request.refusal.body,
      ]),
    );
    row = result.rows[0];
  } catch (error) {
    const verdict = classifyDbError(error);
    // ON CONFLICT makes it unexpected, but a 23505 naming the claim index means exactly "the key is taken".
    if (verdict.kind === "already_claimed") return { kind: "lost" };
    if (verdict.kind === "check_violation" && verdict.constraint === REWARD_CAP_CONSTRAINT) return { kind: "over_cap" };
    throw error;
  }
  if (!row) return { kind: "lost" };
  return { kind: "decided", ...decidedFromRow(row), creditedTodayMinor: row.credited_today_minor as number | null };
}
