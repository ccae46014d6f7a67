/**
 * What one reconciler pass reports (contract section 4: `POST /api/v1/admin/reconcile` answers
 * `{ examined, completed, failed, redriven, skipped }`; `anomalies` and `bankUnreachable` are added only when
 * there is something to report, so a quiet pass is exactly the contract's shape).
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
  /** A database constraint refused a transition of this row (a bug; logged with the error). */
  "row_error",
] as const;

export const reconcileAnomalySchema = z
  .strictObject({
    kind: z.enum(RECONCILE_ANOMALY_KINDS),
    merchantRef: z.string().nullable().meta({ description: "`topup:<userId>:<refId>` when known." }),
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

  /** Counts an anomaly and keeps it for the result, up to {@link RECONCILE_ANOMALIES_MAX}. */
  addAnomaly(anomaly: ReconcileAnomaly): void {
    if (this.anomalies.length < RECONCILE_ANOMALIES_MAX) this.anomalies.push(anomaly);
  }

  /** The counts as reported; `anomalies` and `bankUnreachable` only when there is something in them. */
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
    return result;
  }
}
