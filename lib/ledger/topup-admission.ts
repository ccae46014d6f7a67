/**
 * A top-up's admission in one statement (contract section 5, case C15; docs/decisions/044): the wallet lock, the
 * headroom decision and the guarded move that records it, in one call of the PL/pgSQL function ledger_admit_topup,
 * or, for a request, together with its claim in one call of ledger_claim_topup (their definitions, and the reason
 * for each part, are in prisma/functions/ledger_admit_topup.sql and ledger_claim_topup.sql). They call the ledger's
 * one claim (ledger_claim), its one guarded move (ledger_move_entry) and its one room under the ceiling
 * (ledger_room_for_credit), like every other operation.
 */
import type { ClaimRequest } from "./claim";
import { classifyDbError } from "./db-errors";
import { ENTRY_COLUMNS, toLedgerEntry, type LedgerEntry, type StoredResponse, type TransitionActor } from "./entry";
import { fingerprint } from "./fingerprint";
import { prepared, type Queryable } from "./queryable";
import type { EntryRef } from "./transitions";

// One call each of the database functions ledger_admit_topup and ledger_claim_topup (their files in
// prisma/functions/ say what they do and why), arguments by name.
const ADMIT_TOPUP_SQL = `SELECT ${ENTRY_COLUMNS}
  FROM ledger_admit_topup(
         p_user_id => $1, p_entry_id => $2::bigint, p_amount_minor => $3::bigint, p_currency => $4,
         p_attempt => $5::int, p_actor => $6, p_max_balance_minor => $7::bigint, p_refusal_status => $8::smallint,
         p_refusal_body => $9)`;

const CLAIM_TOPUP_SQL = `SELECT ${ENTRY_COLUMNS}
  FROM ledger_claim_topup(
         p_user_id => $1, p_ref_id => $2, p_amount_minor => $3::bigint, p_currency => $4, p_fingerprint => $5,
         p_params => $6::jsonb, p_lease_owner => $7, p_lease_ms => $8::int, p_actor => $9,
         p_max_balance_minor => $10::bigint, p_refusal_status => $11::smallint, p_refusal_body => $12)`;

/** The ceiling a top-up's admission is judged against, and what it stores when there is no room. */
export interface TopupCeiling {
  /** MAX_BALANCE_MINOR (contract section 9). */
  readonly maxBalanceMinor: number;
  /** The first response to store when there is no room (the 422 `balance_limit_exceeded` problem). */
  readonly refusal: StoredResponse;
}

/** What {@link admitTopupUnderWalletLock} is asked. */
export interface TopupAdmissionRequest extends TopupCeiling {
  /** The claimed top-up row. */
  readonly ref: EntryRef;
  /** The row's amount (positive minor units) and currency (ISO 4217; used only to create a missing wallet row). */
  readonly amountMinor: number;
  readonly currency: string;
  /** The caller's fencing token: the row moves only while its `attempt` is this one. */
  readonly fencingToken: number;
  readonly actor: Extract<TransitionActor, "request" | "reconciler">;
}

/**
 * Decides `request.ref`'s admission in one statement on `db` (the pool in autocommit: the statement commits by
 * itself, and is safe to run again after a lost connection, since each move is guarded by the row's status and
 * attempt and the store by `response IS NULL`). Under the wallet row's lock (created with balance 0 when missing),
 * when `balance + amountMinor + the user's other pending credits <= maxBalanceMinor` the row moves `initiated` ->
 * `processing`; otherwise it moves `initiated`/`processing` -> `failed` (`balance_limit_exceeded`, the figures in
 * the audit row's detail) and `request.refusal` is stored unless a response is already stored. Both moves only
 * under `request.attempt`.
 *
 * Returns the row as the statement left it; the caller reads the decision from it: `processing` under
 * `request.attempt` is admitted, `failed` for `balance_limit_exceeded` (with its stored response) has no room,
 * anything else was fenced (a take-over, or a row no longer unfinished). Throws database errors, and an Error when
 * the row does not exist.
 */
export async function admitTopupUnderWalletLock(db: Queryable, request: TopupAdmissionRequest): Promise<LedgerEntry> {
  const { ref } = request;
  const result = await db.query(
    prepared("ledger_admit_topup", ADMIT_TOPUP_SQL, [
      ref.userId,
      ref.entryId,
      request.amountMinor,
      request.currency,
      request.fencingToken,
      request.actor,
      request.maxBalanceMinor,
      request.refusal.status,
      request.refusal.body,
    ]),
  );
  const row = result.rows[0];
  if (!row) throw new Error(`ledger entry ${ref.userId}/${ref.entryId} does not exist`);
  return toLedgerEntry(row);
}

/**
 * Claims a top-up key and admits the new row in one statement on `db` (contract sections 1 and 5; case C15): the
 * claim of ./claim.ts `insertClaim` (`request.key.type` must be "topup"), then, in the same statement and commit,
 * {@link admitTopupUnderWalletLock} of the new row under its own attempt. The top-up's attempt for the claim runner
 * (lib/topups/create-topup.ts): safe to run again after a lost connection (the claim then finds its own row).
 *
 * Returns the new row as the admission left it (`processing`, or `failed` for `balance_limit_exceeded` with its
 * stored 422), or null when the key already has a row (also for a unique violation of the claim index itself,
 * contract section 8): the caller takes the loser's path. Throws other database errors.
 */
export async function claimAndAdmitTopup(
  db: Queryable,
  request: ClaimRequest,
  ceiling: TopupCeiling,
): Promise<LedgerEntry | null> {
  const { key } = request;
  if (key.type !== "topup") throw new Error(`claimAndAdmitTopup: a ${key.type} key is not a top-up`);
  try {
    const result = await db.query(
      prepared("ledger_claim_topup", CLAIM_TOPUP_SQL, [
        key.userId,
        key.refId,
        request.amountMinor,
        request.currency,
        fingerprint(key.type, request.params),
        JSON.stringify(request.params),
        request.leaseOwner,
        request.leaseMs,
        request.actor,
        ceiling.maxBalanceMinor,
        ceiling.refusal.status,
        ceiling.refusal.body,
      ]),
    );
    const row = result.rows[0];
    return row ? toLedgerEntry(row) : null;
  } catch (error) {
    if (classifyDbError(error).kind === "already_claimed") return null;
    throw error;
  }
}
