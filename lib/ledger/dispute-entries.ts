/**
 * The ledger's side of a dispute (contract section 12; docs/decisions/036, 037 and 048): its state noted on the entry
 * that credited the charge, and the entries it asks for (a `chargeback`, a `chargeback_reversal`) claimed with their
 * money moved. Both are one call of a database function, in the caller's transaction (the webhook records its event in
 * the same commit); what a dispute asks for is decided by lib/chargebacks/apply-dispute.ts from the bank's word.
 */
import type { DisputeStatus, LedgerEntry, TransitionActor } from "./entry";
import { ENTRY_COLUMNS, toLedgerEntry } from "./entry";
import { fingerprint, type OperationParams } from "./fingerprint";
import type { OperationKey } from "./keys";
import { prepared, type Queryable } from "./queryable";

// prisma/functions/ledger_note_dispute.sql: only ever forward (open, lost, won), under the entry's row lock.
const NOTE_DISPUTE_SQL = `SELECT ledger_note_dispute(
  p_user_id => $1, p_entry_id => $2::bigint, p_dispute_status => $3) AS noted`;

/**
 * Notes `status` (the bank's word) as the dispute state of `credited`, the top-up or adjustment that credited the
 * disputed charge, on `db`: only ever forward (open, lost, won), so a stale reading changes nothing. Takes the entry's
 * row lock, the first lock of every statement about a top-up's money, so a refund's claim racing it sees it (case
 * C26). Returns true when the entry changed. Throws database errors.
 */
export async function noteDisputeStatus(
  db: Queryable,
  credited: Pick<LedgerEntry, "userId" | "id">,
  status: DisputeStatus,
): Promise<boolean> {
  const result = await db.query(
    prepared("ledger_note_dispute", NOTE_DISPUTE_SQL, [credited.userId, credited.id, status]),
  );
  return result.rows[0]?.noted === true;
}

// prisma/functions/ledger_land_bank_entry.sql: the claim, born succeeded, and the debit into debt or the credit.
const LAND_BANK_ENTRY_SQL = `SELECT ${ENTRY_COLUMNS}
  FROM ledger_land_bank_entry(
         p_user_id => $1, p_type => $2, p_ref_id => $3, p_amount_minor => $4::bigint, p_currency => $5,
         p_fingerprint => $6, p_params => $7::jsonb, p_actor => $8, p_detail => $9)`;

/** One entry the bank's word asks for: a dispute's, or a paid payout's return. */
export interface BankEntryRequest {
  /** `(user, "chargeback" | "chargeback_reversal", <dispute id>)` or `(user, "payout_return", <the payout's ref id>)`. */
  readonly key: OperationKey;
  /** The bank's dispute or returned payout amount, in minor units of `currency`. */
  readonly amountMinor: number;
  readonly currency: string;
  /** Fingerprinted: amount, currency and the disputed charge's id or the bank's return id. */
  readonly params: OperationParams;
  readonly actor: TransitionActor;
  readonly detail: string;
}

/**
 * Claims an entry the bank's word asks for on `db` and moves its money in the same call (contract sections 12 and
 * 14): a chargeback debits the wallet, into debt where the balance is short (never a negative balance); a reversal or
 * a payout's return credits it, repaying a debt first. The entry is
 * born `succeeded`, with its two audit rows. Returns the new row, or null when the key already has a row (the caller
 * reads it and compares its parameters). Throws database errors.
 */
export async function landBankEntry(db: Queryable, request: BankEntryRequest): Promise<LedgerEntry | null> {
  const { key } = request;
  if (key.type !== "chargeback" && key.type !== "chargeback_reversal" && key.type !== "payout_return")
    throw new Error(`landBankEntry: a ${key.type} key is not an entry the bank's word lands`);
  const result = await db.query(
    prepared("ledger_land_bank_entry", LAND_BANK_ENTRY_SQL, [
      key.userId,
      key.type,
      key.refId,
      request.amountMinor,
      request.currency,
      fingerprint(key.type, request.params),
      JSON.stringify(request.params),
      request.actor,
      request.detail,
    ]),
  );
  const row = result.rows[0];
  return row ? toLedgerEntry(row) : null;
}
