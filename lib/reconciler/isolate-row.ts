/**
 * A reconciler pass isolates rows (case C29, docs/decisions/050): whatever one row's work throws stays with that row,
 * which is reported, counted on the row and left for a later pass, so one bad row costs that row, never the pass.
 * Only a database that cannot be reached at all stops the pass (./row-guard.ts `judgeRowError` tells them apart).
 * With it, what a row's work is about (its subject: the row, its merchant reference and its charge), named by every
 * anomaly and error it reports.
 */
import { merchantRefFor } from "../bank/merchant-ref";
import { env } from "../env";
import { classifyDbError, recordSettleFailure, type LedgerEntry } from "../ledger";
import { log } from "../log";
import { payoutMerchantRefFor } from "../bank/merchant-ref";
import { refundMerchantRefFor } from "../refunds/refund-ref";
import { describeSettleError } from "../topups/settle-topup";
import { note, type PassContext } from "./pass-context";
import { judgeRowError } from "./row-guard";

/**
 * Thrown inside a pass, and caught by ./reconcile-once.ts `reconcileOnce` only, when the database cannot be reached at
 * all: the pass stops and reports what it did (case C29). Never escapes the pass.
 */
export class DatabaseUnreachableError extends Error {
  constructor(readonly error: unknown) {
    super("the database cannot be reached", { cause: error });
  }
}

/** What became of one row: done with for this pass (settled or left), the bank down, or its work failed (counted). */
export type RowVerdict = "done" | "bank_down" | "errored";

/** What a row's work is about: named by every anomaly and error it reports (contract section 5, case C19). */
export interface Subject {
  merchantRef: string | null;
  /** Filled in as soon as the charge is known (the bank's answer), so an error after it names the charge. */
  chargeId: string | null;
  /** The ledger row, once known: a failure of the work is counted on it. */
  entry: LedgerEntry | null;
}

/** The subject of a row's work: the row, its merchant reference and the charge it records. */
export function subjectOf(entry: LedgerEntry): Subject {
  return { merchantRef: merchantRefOfEntry(entry), chargeId: entry.bankChargeId, entry };
}

/**
 * The key the row is known by at the bank: `topup:<userId>:<refId>` for a top-up (contract section 5),
 * `refund:<userId>:<refundId>` for a refund (contract section 11, lib/refunds/refund-ref.ts); null for the types that
 * never reach the bank, and for a key that cannot be written as one (a user id with ':' cannot reach the bank).
 */
export function merchantRefOfEntry(entry: LedgerEntry): string | null {
  try {
    if (entry.type === "topup") return merchantRefFor(entry.userId, entry.refId);
    if (entry.type === "payout") return payoutMerchantRefFor(entry.userId, entry.refId);
    return entry.type === "refund" ? refundMerchantRefFor(entry.userId, entry.refId) : null;
  } catch {
    return null;
  }
}

/** The row's key in the pass's `erroredRows`. */
export const rowKey = (entry: LedgerEntry): string => `${entry.userId}/${entry.id}`;

/**
 * Runs the work on one row (or one bank charge). Whatever it throws stays with that row (case C29): a constraint
 * violation (a bug on that row, e.g. two rows claiming one bank charge), a statement that timed out behind a lock
 * (./row-guard.ts `inRowTransaction`), an unexpected SQLSTATE, a bug. The error is logged, the row left (`left`) and
 * reported as a `row_error` anomaly (`errored`) naming `subject`'s merchant reference and charge id as they are when
 * it happened (contract section 5), counted on the row, and kept from being tried again in this pass: returns
 * "errored", and the pass goes on. Returns what `work` returns otherwise. Throws {@link DatabaseUnreachableError}
 * only when the database cannot be reached at all.
 */
export async function isolateRow(
  pass: PassContext,
  subject: Subject,
  work: () => Promise<RowVerdict>,
): Promise<RowVerdict> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof DatabaseUnreachableError) throw error;
    if ((await judgeRowError(error)) === "database_unreachable") throw new DatabaseUnreachableError(error);
    const verdict = classifyDbError(error);
    pass.logger.warn(
      { err: error, verdict, merchantRef: subject.merchantRef, chargeId: subject.chargeId },
      "reconciler: a row's work failed; left for a later pass",
    );
    const counted = subject.entry ? await countRowFailure(subject.entry, subject, error) : "";
    const sqlstate = sqlstateOf(error);
    const what =
      verdict.kind === "unknown" || verdict.kind === "retryable" || verdict.kind === "connection_lost"
        ? `the row's work failed (${sqlstate ? `SQLSTATE ${sqlstate}: ` : ""}${describeSettleError(error)})`
        : `the database refused a transition (${verdict.kind}${"constraint" in verdict && verdict.constraint ? ` on ${verdict.constraint}` : ""})`;
    const { merchantRef, chargeId } = subject;
    note(pass, { kind: "left" });
    note(pass, { kind: "errored", anomaly: { kind: "row_error", merchantRef, chargeId, detail: `${what}${counted}` } });
    if (subject.entry) pass.erroredRows.add(rowKey(subject.entry));
    return "errored";
  }
}

/**
 * The SQLSTATE an error carries (a pg `DatabaseError`'s `code`, or one a few `cause`s down), for the admin's reading
 * only: the decisions are lib/ledger `classifyDbError`'s. Null when there is none.
 */
function sqlstateOf(error: unknown): string | null {
  let current: unknown = error;
  // 4 levels: a pg error under our own wrappers sits at most 3 deep (lib/ledger/db-errors.ts, case C01).
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/**
 * Counts one failed attempt on `entry`, whatever its type (contract section 5: a settlement that keeps failing is
 * flagged after SETTLE_ATTEMPTS_MAX attempts, with its last error; lib/ledger `recordSettleFailure`). Logged naming
 * `subject`'s merchant reference and charge id; at error level once flagged. Returns the words the anomaly adds
 * ("; failure 2 of 5 on this row"), or "" when nothing could be recorded. Never throws: a failure to record is
 * logged, and the row's own error stands.
 */
async function countRowFailure(entry: LedgerEntry, subject: Subject, error: unknown): Promise<string> {
  const noun = entry.type === "topup" ? "top-up" : entry.type;
  const attemptsMax = env().SETTLE_ATTEMPTS_MAX;
  try {
    const noted = await recordSettleFailure(
      { userId: entry.userId, entryId: entry.id },
      describeSettleError(error),
      attemptsMax,
    );
    if (!noted) return "";
    const fields = {
      err: error,
      merchantRef: subject.merchantRef,
      chargeId: subject.chargeId,
      failures: noted.failures,
    };
    // The same words as lib/topups/settle-topup.ts `noteSettleFailure`, for every type the reconciler settles.
    if (noted.flaggedAt) log().error(fields, `${noun} settlement keeps failing: flagged for attention`);
    else log().warn(fields, `${noun} settlement failed`);
    return `; failure ${noted.failures} of ${attemptsMax} on this row${noted.flaggedAt ? ", flagged for attention" : ""}`;
  } catch (recordError) {
    log().error(
      { err: recordError, cause: error, merchantRef: subject.merchantRef, chargeId: subject.chargeId },
      "settlement failure not recorded",
    );
    return "";
  }
}
