import { pool } from "../db";
import { ENTRY_COLUMNS, type TransitionActor, toLedgerEntry } from "../ledger";
import { parseReadableReference } from "./readable-reference";
import { CUSTOMER_MOVEMENT_SQL, type StatementLine, statementLine } from "./statement-line";

/** One step of a movement's timeline: a row of its audit trail (ledger_transitions, contract section 2). */
export interface MovementStep {
  /** ISO-8601 UTC, milliseconds. */
  readonly at: string;
  /** The status before (null for the claim) and after. */
  readonly from: string | null;
  readonly to: string;
  readonly actor: TransitionActor;
}

/** A movement's receipt (its statement line) and its timeline, oldest step first. */
export interface Movement {
  readonly line: StatementLine;
  readonly steps: MovementStep[];
}

/**
 * Most steps shown. A movement has two to four transitions (claim, processing, final) plus a take-over now and then;
 * 50 bounds a pathological row without hiding anything normal.
 */
const MOVEMENT_STEPS_MAX = 50;

const MOVEMENT_SQL = `
SELECT ${ENTRY_COLUMNS} FROM ledger_entries
 WHERE user_id = $1 AND id = $2 AND ($3::text IS NULL OR type = $3) AND ${CUSTOMER_MOVEMENT_SQL}`;

const STEPS_SQL = `
SELECT at, from_status, to_status, actor
  FROM ledger_transitions WHERE user_id = $1 AND entry_id = $2 ORDER BY id LIMIT $3`;

/**
 * The movement of `userId` whose readable reference is `reference` (lib/wallet/readable-reference.ts; any case,
 * dashes optional), for its page (docs/decisions/055): the receipt and the audit trail. Returns null when the text
 * is not a reference, when no entry of this user has it (another user's entry is not found either), or when the
 * entry is not a movement of the customer's money (a refund refused at its claim: `CUSTOMER_MOVEMENT_SQL`).
 * `userId` comes from the session. Throws database errors.
 */
export async function getMovement(userId: string, reference: string): Promise<Movement | null> {
  const parsed = parseReadableReference(reference);
  if (!parsed) return null;
  const found = await pool().query(MOVEMENT_SQL, [userId, parsed.id, parsed.type]);
  const row = found.rows[0];
  if (!row) return null;
  const entry = toLedgerEntry(row);
  const steps = await pool().query(STEPS_SQL, [userId, entry.id, MOVEMENT_STEPS_MAX]);
  return {
    line: statementLine(entry),
    steps: steps.rows.map((step) => ({
      at: (step.at as Date).toISOString(),
      from: (step.from_status as string | null) ?? null,
      to: step.to_status as string,
      actor: step.actor as TransitionActor,
    })),
  };
}
