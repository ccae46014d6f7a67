/**
 * One house account's postings, newest first, one cursor page at a time (contract section 13.5; decisions 020 and
 * 058): the admin Books page's drill-down and `GET /api/v1/admin/books/{account}/postings`.
 */
import { z } from "zod";
import { pool } from "../db";
import { LEDGER_TYPES, type LedgerType } from "../ledger";
import { boundedLimit, keysetAfterMicros, pageOf, type Page } from "../pagination/cursor";
import { readableReference } from "../wallet/readable-reference";

export const bookAccountSchema = z
  .strictObject({
    name: z.string(),
    normalSide: z.enum(["debit", "credit"]),
    description: z.string(),
  })
  .meta({ id: "BookAccount" });

export const bookPostingSchema = z
  .strictObject({
    id: z.int().min(1).meta({ description: "The posting's id (increasing)." }),
    postedAt: z.iso.datetime().meta({ description: "When it was posted (UTC; stored to the microsecond)." }),
    userId: z.string(),
    userEmail: z.string().nullable().meta({ description: "The user's address; null once the account is deleted." }),
    type: z.enum(LEDGER_TYPES).meta({ description: "The kind of movement (its ledger entry's type)." }),
    event: z.enum(["move", "reserve", "settle", "release"]).meta({
      description: "`move`; a refund's `reserve`, `settle` or `release` (contract section 13.2).",
    }),
    refId: z.string().meta({ description: "The movement's full reference (its ledger entry's ref id)." }),
    reference: z.string().meta({ description: "The movement's readable reference (`TP-7K3Q-9D2M`)." }),
    amountMinor: z.int().meta({ description: "The posting, signed: what the account gains, credit-positive." }),
    balanceChangeMinor: z.int().meta({
      description: "What it did to the account's balance as shown (minus `amountMinor` on a debit-normal account).",
    }),
    currency: z.string(),
    topupRefId: z
      .string()
      .nullable()
      .meta({
        description:
          "The top-up whose admin timeline shows this movement: the top-up itself, a refund's or an adjustment's " +
          "top-up, or the disputed top-up of a chargeback; null for payments and rewards.",
      }),
  })
  .meta({ id: "BookPosting" });

export type BookAccount = z.infer<typeof bookAccountSchema>;
export type BookPosting = z.infer<typeof bookPostingSchema>;

export type AccountPostingsResult =
  | ({ readonly kind: "page"; readonly account: BookAccount } & Page<BookPosting>)
  | { readonly kind: "unknown_account" }
  | { readonly kind: "invalid_cursor"; readonly detail: string };

const HOUSE_ACCOUNT_SQL = `
SELECT name, normal_side, description FROM ledger_accounts WHERE name = $1 AND kind = 'house'`;

// $1 account, $2 and $3 the cursor's (posted_at, id) or nulls, $4 limit. The page is read from the partial index
// ledger_postings_house_idx (account, posted_at, id) backwards from the cursor, then joined to at most $4 entries, each
// read by its key; the top-up of a refund or adjustment by its key too, a dispute's by the unique (user_id,
// bank_charge_id). `p.account <> 'wallet'` is the index's predicate, written out for the planner.
const POSTINGS_SQL = `
WITH page AS (
  SELECT p.id, p.user_id, p.entry_id, p.event, p.amount_minor, p.currency, p.posted_at
    FROM ledger_postings p
   WHERE p.account = $1 AND p.account <> 'wallet'
     AND ($2::timestamptz IS NULL OR (p.posted_at, p.id) < ($2::timestamptz, $3::bigint))
   ORDER BY p.posted_at DESC, p.id DESC
   LIMIT $4
)
SELECT pg.id::text, pg.user_id, u.email AS user_email, pg.entry_id::text, pg.event, pg.amount_minor::text,
       pg.currency, (extract(epoch FROM pg.posted_at) * 1000000)::bigint::text AS posted_us, e.type, e.ref_id,
       CASE WHEN e.type = 'topup' THEN e.ref_id
            WHEN e.type IN ('refund', 'adjustment') THEN
              (SELECT t.ref_id FROM ledger_entries t WHERE t.user_id = e.user_id AND t.type = 'topup'
                  AND t.id = COALESCE(e.refunds_entry_id, e.adjusts_entry_id))
            WHEN e.type IN ('chargeback', 'chargeback_reversal') THEN
              (SELECT t.ref_id FROM ledger_entries t WHERE t.user_id = e.user_id AND t.type = 'topup'
                  AND t.bank_charge_id = e.params->>'chargeId') END AS topup_ref_id
  FROM page pg
  JOIN ledger_entries e ON e.user_id = pg.user_id AND e.id = pg.entry_id
  LEFT JOIN "user" u ON u.id = pg.user_id
 ORDER BY pg.posted_at DESC, pg.id DESC`;

interface PostingRow {
  id: string;
  user_id: string;
  user_email: string | null;
  entry_id: string;
  event: BookPosting["event"];
  amount_minor: string;
  currency: string;
  posted_us: string;
  type: LedgerType;
  ref_id: string;
  topup_ref_id: string | null;
}

/** A row as the API shows it, on an account of `normalSide`. */
function postingView(row: PostingRow, normalSide: BookAccount["normalSide"]): BookPosting {
  const amountMinor = Number(row.amount_minor);
  return {
    id: Number(row.id),
    postedAt: new Date(Number(BigInt(row.posted_us) / 1000n)).toISOString(),
    userId: row.user_id,
    userEmail: row.user_email,
    type: row.type,
    event: row.event,
    refId: row.ref_id,
    reference: readableReference(row.type, Number(row.entry_id)),
    amountMinor,
    balanceChangeMinor: normalSide === "debit" ? -amountMinor : amountMinor,
    currency: row.currency,
    topupRefId: row.topup_ref_id,
  };
}

/** A row's place in the list, to the microsecond (the cursor's `subMillisecondUs`). */
function positionOf(row: PostingRow) {
  const postedUs = BigInt(row.posted_us);
  return {
    createdAt: new Date(Number(postedUs / 1000n)),
    subMillisecondUs: Number(postedUs % 1000n),
    id: Number(row.id),
  };
}

/**
 * Lists the postings of the house account `account` (contract section 13.1: `bank_clearing`, `refunds_in_flight`,
 * `rewards_funded`, `merchants_payable`), newest first by `(posted_at, id)`: `posted_at` is stored to the microsecond,
 * and the cursor carries it whole (a cursor cut to the millisecond would skip the rows of that millisecond); `id` is
 * unique, so ties on the time neither repeat nor skip a row (docs/decisions/020). Each posting comes with its
 * movement: the entry's type, full and readable reference (lib/wallet/readable-reference.ts), its user and the top-up
 * whose admin timeline shows it.
 *
 * @param options.account an account name from the address; `wallet` is not listed here (it is one account per user).
 * @param options.limit 1..100, 50 when absent (contract section 4).
 * @param options.cursor a previous page's `nextCursor` for the same account.
 * @returns the page and its `nextCursor` (null on the last page); `unknown_account` for a name that is not a house
 *   account (the callers answer 404); `invalid_cursor` with a 400 detail for a malformed or foreign cursor.
 * @throws database errors.
 */
export async function listAccountPostings(options: {
  account: string;
  limit?: number;
  cursor?: string;
}): Promise<AccountPostingsResult> {
  const found = await pool().query<{ name: string; normal_side: BookAccount["normalSide"]; description: string }>(
    HOUSE_ACCOUNT_SQL,
    [options.account],
  );
  const row = found.rows[0];
  if (!row) return { kind: "unknown_account" };
  const account: BookAccount = { name: row.name, normalSide: row.normal_side, description: row.description };
  const limit = boundedLimit(options.limit);
  const scope = `account:${account.name}`;
  const after = keysetAfterMicros(options.cursor, "admin-account-postings", scope);
  if (!after.ok) return { kind: "invalid_cursor", detail: after.detail };
  const result = await pool().query<PostingRow>(POSTINGS_SQL, [account.name, ...after.params, limit + 1]);
  const page = pageOf(result.rows, limit, "admin-account-postings", scope, positionOf, (r) =>
    postingView(r, account.normalSide),
  );
  return { kind: "page", account, ...page };
}
