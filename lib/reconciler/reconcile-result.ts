/**
 * What one reconciler pass reports (contract section 4: `POST /api/v1/admin/reconcile` answers
 * `{ examined, completed, failed, redriven, skipped }`; `anomalies`, `bankUnreachable`, `errored` and
 * `databaseUnreachable` are added only when there is something to report, so a quiet pass is exactly the contract's
 * shape). A pass that met errors reports what it did anyway: partial results, never an exception (case C29).
 */
import { z } from "zod";
import type { UnknownOutcome } from "../bank/client";
import { SETTLEMENT_ANOMALY_KINDS } from "../topups/settle-topup";

/**
 * Things a pass found that it must not fix by itself: an admin has to look (they credit nothing). The settlement's
 * own kinds (lib/topups/settle-topup.ts: amount, currency or charge id mismatches, a failed row whose charge
 * succeeded, a credited row the bank disowns) plus the reconciler's.
 */
export const RECONCILE_ANOMALY_KINDS = [
  ...SETTLEMENT_ANOMALY_KINDS,
  /** A succeeded charge whose merchant reference is not a top-up reference of ours. */
  "unknown_merchant_ref",
  /** A reward or payment row left unfinished (they are single-transaction and never should be). */
  "unfinished_non_topup",
  /** The row's key cannot be written as a merchant reference (a user id with ':' cannot reach the bank). */
  "invalid_merchant_ref",
  /** The bank refused a request with a 4xx other than the documented ones (e.g. 422 idempotency_key_reused). */
  "bank_refused",
  /**
   * The work on this row, charge or dispute failed: a constraint refused a transition, a statement timed out behind
   * a lock, or the database raised an unexpected error (logged with it). The row's failure is counted on it (flagged
   * after SETTLE_ATTEMPTS_MAX) and a later pass tries again; the rest of the pass went on (case C29).
   */
  "row_error",
  /**
   * A bank payout with no payout row for its key, or contradicting its row (another amount or account; paid while the
   * ledger gave the hold back; failed while the ledger posted it): nothing moved (contract section 14).
   */
  "payout_mismatch",
] as const;

export const reconcileAnomalySchema = z
  .strictObject({
    kind: z.enum(RECONCILE_ANOMALY_KINDS),
    merchantRef: z
      .string()
      .nullable()
      .meta({ description: "`topup:<userId>:<refId>` (a refund's: `refund:<userId>:<refundId>`) when known." }),
    chargeId: z.string().nullable(),
    detail: z.string().meta({ description: "One sentence for the admin page and logs." }),
  })
  .meta({ id: "ReconcileAnomaly" });
export type ReconcileAnomaly = Readonly<z.infer<typeof reconcileAnomalySchema>>;

/** The bank did not answer (timeout, refused connection, 5xx, unreadable): rows were left, not dropped (7.5). */
export const bankUnreachableReportSchema = z
  .strictObject({
    reason: z.string().meta({ description: "`timeout`, `network`, `server_error` or `bad_response`, and its detail." }),
    rowsLeft: z
      .int()
      .min(0)
      .meta({ description: "Unfinished rows with an expired lease that this pass could not settle because of it." }),
    chargesUnlisted: z
      .boolean()
      .meta({ description: "True when the bank's charge list could not be read (the bank-to-ledger direction)." }),
  })
  .meta({ id: "BankUnreachableReport" });
export type BankUnreachableReport = Readonly<z.infer<typeof bankUnreachableReportSchema>>;

/** The steps of a pass, in order (lib/reconciler/reconcile-once.ts). */
export const RECONCILE_STEPS = ["ledger_to_bank", "bank_to_ledger", "disputes", "payouts", "reward_counters"] as const;
export type ReconcileStep = (typeof RECONCILE_STEPS)[number];

/**
 * The database could not be used at all (every connection attempt failed): the pass stopped at `step` and reports
 * what it did until then (case C29). Rows it had not reached are left for a later pass, never dropped.
 */
export const databaseUnreachableReportSchema = z
  .strictObject({
    step: z.enum(RECONCILE_STEPS).meta({ description: "The step the pass stopped in; the later steps did not run." }),
    reason: z
      .string()
      .meta({ description: "How the database failed, e.g. `connection to the database lost (ECONNREFUSED)`." }),
  })
  .meta({ id: "DatabaseUnreachableReport" });
export type DatabaseUnreachableReport = Readonly<z.infer<typeof databaseUnreachableReportSchema>>;

const count = (description: string) => z.int().min(0).meta({ description });

/** `POST /api/v1/admin/reconcile` (contract section 4); the OpenAPI document's `ReconcileResult`. */
export const reconcileResultSchema = z
  .strictObject({
    examined: count("Rows taken over plus bank charges that needed a decision."),
    completed: count("Rows this pass moved to `succeeded`, and adjustments it credited (each credited once)."),
    failed: count("Rows this pass moved to `failed` (declined, or `expired` after a confirmed cancel)."),
    redriven: count("Rows whose charge this pass sent to the bank again (same merchant reference)."),
    skipped: count("Rows and charges looked at and left as they were."),
    anomalies: z
      .array(reconcileAnomalySchema)
      .optional()
      .meta({ description: "Only when there are some (at most 100)." }),
    bankUnreachable: bankUnreachableReportSchema.optional(),
    errored: count(
      "Only when some: rows, charges and disputes whose work failed with an error this pass (each one is also a " +
        "`row_error` anomaly naming its merchant reference and charge id); the rest of the pass went on.",
    ).optional(),
    databaseUnreachable: databaseUnreachableReportSchema.optional(),
  })
  .meta({ id: "ReconcileResult" });
export type ReconcileResult = z.infer<typeof reconcileResultSchema>;

/**
 * How many anomalies one result lists. A pass over a badly broken ledger could find thousands; the first 100
 * are enough to act on, the log has every one (each is logged as it is found), and the admin response stays small.
 */
export const RECONCILE_ANOMALIES_MAX = 100;

/**
 * What a pass did with one row, charge, dispute or step, noted as it happened (lib/reconciler/pass-context.ts
 * `note`). The pass's result is derived from the list of these alone, by {@link tallyPass}.
 */
export type PassOutcome =
  /** A row taken over, or a bank charge that needed a decision. */
  | { readonly kind: "examined" }
  /** The pass moved a row to `succeeded`, or credited an adjustment (each credited once). */
  | { readonly kind: "completed" }
  /** The pass moved a row to `failed` (declined, `expired` after a confirmed cancel, or no room under the ceiling). */
  | { readonly kind: "failed" }
  /** The pass sent a row's charge to the bank again (same Idempotency-Key). */
  | { readonly kind: "redriven" }
  /** A row or charge looked at and left as it was; `anomaly` when an admin must look at what was found. */
  | { readonly kind: "left"; readonly anomaly?: ReconcileAnomaly }
  /** Something an admin must look at that left no row (the bank refused the charge list). */
  | { readonly kind: "reported"; readonly anomaly: ReconcileAnomaly }
  /** The work on a row, charge, dispute or step failed with an error (case C29): `anomaly` is its `row_error`. */
  | { readonly kind: "errored"; readonly anomaly: ReconcileAnomaly }
  /** The bank did not answer: `rowsLeft` rows it left (1 for a row, 0 for the charge list). */
  | { readonly kind: "bank_unknown"; readonly outcome: UnknownOutcome; readonly rowsLeft: number }
  /** Unfinished rows with an expired lease that the pass did not reach because the bank did not answer. */
  | { readonly kind: "rows_left"; readonly rowsLeft: number }
  /** The bank's charge list could not be read: the bank-to-ledger direction did not run. */
  | { readonly kind: "charges_unlisted" }
  /** The database could not be reached at all: the pass stopped in `step`. */
  | { readonly kind: "database_unreachable"; readonly step: ReconcileStep; readonly reason: string };

/**
 * The result of a pass that did `outcomes`, in the order they happened (contract section 4): each count is the number
 * of its outcome (`skipped` counts the rows and charges left as they were); `anomalies` the first
 * {@link RECONCILE_ANOMALIES_MAX} anomalies; `bankUnreachable` when the bank did not answer or its charge list could
 * not be read (the first unknown outcome's reason, every row it left); `errored` the failed works; and
 * `databaseUnreachable` where the pass stopped. The last four only when there is something in them: a quiet pass is
 * exactly the contract's five counts. Pure.
 */
export function tallyPass(outcomes: readonly PassOutcome[]): ReconcileResult {
  const counts = { examined: 0, completed: 0, failed: 0, redriven: 0, skipped: 0 };
  const anomalies: ReconcileAnomaly[] = [];
  let errored = 0;
  for (const outcome of outcomes) {
    switch (outcome.kind) {
      case "examined":
      case "completed":
      case "failed":
      case "redriven":
        counts[outcome.kind] += 1;
        break;
      case "left":
        counts.skipped += 1;
        break;
      case "errored":
        errored += 1;
        break;
    }
    if ("anomaly" in outcome && outcome.anomaly) anomalies.push(outcome.anomaly);
  }
  const result: ReconcileResult = { ...counts };
  if (anomalies.length > 0) result.anomalies = anomalies.slice(0, RECONCILE_ANOMALIES_MAX);
  const bankUnreachable = bankUnreachableOf(outcomes);
  if (bankUnreachable) result.bankUnreachable = bankUnreachable;
  if (errored > 0) result.errored = errored;
  const stopped = outcomes.find((outcome) => outcome.kind === "database_unreachable");
  if (stopped) result.databaseUnreachable = { step: stopped.step, reason: stopped.reason };
  return result;
}

/** The bank's part of a pass's result, or null when the bank answered every call and listed its charges. */
function bankUnreachableOf(outcomes: readonly PassOutcome[]): BankUnreachableReport | null {
  let first: UnknownOutcome | null = null;
  let rowsLeft = 0;
  let chargesUnlisted = false;
  for (const outcome of outcomes) {
    if (outcome.kind === "bank_unknown") first ??= outcome.outcome;
    if (outcome.kind === "bank_unknown" || outcome.kind === "rows_left") rowsLeft += outcome.rowsLeft;
    if (outcome.kind === "charges_unlisted") chargesUnlisted = true;
  }
  if (!first && !chargesUnlisted) return null;
  return { reason: first ? describeUnknown(first) : "charge list unreadable", rowsLeft, chargesUnlisted };
}

function describeUnknown(outcome: UnknownOutcome): string {
  return outcome.detail ? `${outcome.reason}: ${outcome.detail}` : outcome.reason;
}
