/**
 * The invariant audit (contract section 7): a list of named checks, each returning its violations.
 * `npm run audit`, `GET /api/v1/admin/audit`, the tests and the storm all run the same checks.
 */

export interface AuditCheckResult {
  readonly name: string;
  readonly ok: boolean;
  /** Human-readable descriptions of each violation, bounded (a check reports at most 100). */
  readonly violations: string[];
}

export interface AuditCheck {
  /** Stable identifier, e.g. "balance_matches_ledger". */
  readonly name: string;
  /** Runs the check against the database (and Redis where relevant). Throws only when it cannot run. */
  run(): Promise<AuditCheckResult>;
}

/** Most violations a check lists: enough to diagnose, bounded so a corrupted ledger cannot flood a response. */
export const AUDIT_VIOLATIONS_MAX = 100;
