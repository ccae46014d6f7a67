/**
 * What one reconciler pass reports (contract section 4: `POST /api/v1/admin/reconcile` answers
 * `{ examined, completed, failed, redriven, skipped }`; `anomalies`, `bankUnreachable`, `errored` and
 * `databaseUnreachable` are added only when there is something to report, so a quiet pass is exactly the contract's
 * shape). A pass that met errors reports what it did anyway: partial results, never an exception (case C29).
 */
import { z } from "zod";
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
export const RECONCILE_STEPS = ["ledger_to_bank", "bank_to_ledger", "disputes", "reward_counters"] as const;
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
    redriven: count("Rows whose charge this pass sent to the bank again (same Idempotency-Key)."),
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

/** Mutable counters of one pass (not shared between passes); {@link ReconcileTally.toResult} gives the reported shape. */
export class ReconcileTally {
  examined = 0;
  completed = 0;
  failed = 0;
  redriven = 0;
  skipped = 0;
  readonly anomalies: ReconcileAnomaly[] = [];
  bankUnreachable: BankUnreachableReport | null = null;
  /** Rows, charges and disputes whose work failed with an error (case C29). */
  errored = 0;
  databaseUnreachable: DatabaseUnreachableReport | null = null;

  /** Counts an anomaly and keeps it for the result, up to {@link RECONCILE_ANOMALIES_MAX}. */
  addAnomaly(anomaly: ReconcileAnomaly): void {
    if (this.anomalies.length < RECONCILE_ANOMALIES_MAX) this.anomalies.push(anomaly);
  }

  /**
   * The counts as reported; `anomalies`, `bankUnreachable`, `errored` and `databaseUnreachable` only when there is
   * something in them (a quiet pass is exactly the contract's five counts).
   */
  toResult(): ReconcileResult {
    const result: ReconcileResult = {
      examined: this.examined,
      completed: this.completed,
      failed: this.failed,
      redriven: this.redriven,
      skipped: this.skipped,
    };
    if (this.anomalies.length > 0) result.anomalies = [...this.anomalies];
    if (this.bankUnreachable) result.bankUnreachable = this.bankUnreachable;
    if (this.errored > 0) result.errored = this.errored;
    if (this.databaseUnreachable) result.databaseUnreachable = this.databaseUnreachable;
    return result;
  }
}
