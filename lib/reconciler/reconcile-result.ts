/**
 * What one reconciler pass reports (contract section 4: `POST /api/v1/admin/reconcile` answers
 * `{ examined, completed, failed, redriven, skipped }`; `anomalies` and `bankUnreachable` are added only when
 * there is something to report, so a quiet pass is exactly the contract's shape).
 */

/** Things a pass found that it must not fix by itself: an admin has to look (they credit nothing). */
export type ReconcileAnomalyKind =
  /** The bank's charge has another amount than the ledger row (or than the wallet would accept). */
  | "amount_mismatch"
  /** The bank's charge is in another currency than the row, or than the wallet currency for a missing row. */
  | "currency_mismatch"
  /** The row already records another bank charge id than the one the bank reports for its key. */
  | "charge_mismatch"
  /** The bank says the charge succeeded, but the row has already failed: money taken, nothing credited. */
  | "success_for_failed_row"
  /** The bank says the charge was declined, but the row was credited. */
  | "decline_for_succeeded_row"
  /** A succeeded charge whose merchant reference is not a top-up reference of ours. */
  | "unknown_merchant_ref"
  /** A reward or payment row left unfinished (they are single-transaction and never should be). */
  | "unfinished_non_topup"
  /** The row's key cannot be written as a merchant reference (a user id with ':' cannot reach the bank). */
  | "invalid_merchant_ref"
  /** The bank refused a request with a 4xx other than the documented ones (e.g. 422 idempotency_key_reused). */
  | "bank_refused"
  /** A database constraint refused a transition of this row (a bug; logged with the error). */
  | "row_error";

export interface ReconcileAnomaly {
  readonly kind: ReconcileAnomalyKind;
  /** `topup:<userId>:<refId>` when known. */
  readonly merchantRef: string | null;
  readonly chargeId: string | null;
  /** One sentence for the admin page and logs. */
  readonly detail: string;
}

/** The bank did not answer (timeout, refused connection, 5xx, unreadable): rows were left, not dropped (7.5). */
export interface BankUnreachableReport {
  /** The client's reason (`timeout`, `network`, `server_error`, `bad_response`) and its detail. */
  readonly reason: string;
  /** Unfinished rows whose lease is expired and that this pass could not settle because of it. */
  readonly rowsLeft: number;
  /** True when the bank's charge list could not be read (the bank-to-ledger direction did not run fully). */
  readonly chargesUnlisted: boolean;
}

export interface ReconcileResult {
  /** Rows taken over plus bank charges that needed a decision (a charge that already matches is not counted). */
  examined: number;
  /** Rows this pass moved to `succeeded` (each credited once, in the same statement). */
  completed: number;
  /** Rows this pass moved to `failed` (declined by the bank, or `expired` after a confirmed cancel). */
  failed: number;
  /** Rows whose charge this pass sent to the bank again (same Idempotency-Key); also counted in completed/failed when the answer was final. */
  redriven: number;
  /** Rows and charges looked at and left as they were (pending at the bank, finished by someone else, anomalies, bank unreachable). */
  skipped: number;
  anomalies?: ReconcileAnomaly[];
  bankUnreachable?: BankUnreachableReport;
}

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
