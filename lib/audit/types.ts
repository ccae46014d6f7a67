/**
 * The invariant audit (contract section 7): a list of named checks, each returning its violations.
 * `npm run audit`, `GET /api/v1/admin/audit`, the tests and the storm all run the same checks.
 */
import { z } from "zod";

/** One check's verdict; `violations` are human-readable, at most {@link AUDIT_VIOLATIONS_MAX}. */
export const auditCheckResultSchema = z
  .strictObject({
    name: z.string(),
    ok: z.boolean(),
    violations: z.array(z.string()).meta({ description: "Human-readable, at most 100 per check." }),
  })
  .meta({ id: "AuditCheckResult" });
export type AuditCheckResult = Readonly<z.infer<typeof auditCheckResultSchema>>;

/** `GET /api/v1/admin/audit`: `ok` is true when every check holds. */
export const auditReportSchema = z
  .strictObject({ ok: z.boolean(), checks: z.array(auditCheckResultSchema) })
  .meta({ id: "AuditReport" });

export interface AuditCheck {
  /** Stable identifier, e.g. "balance_matches_ledger". */
  readonly name: string;
  /** Runs the check against the database (and Redis where relevant). Throws only when it cannot run. */
  run(): Promise<AuditCheckResult>;
}

/** Most violations a check lists: enough to diagnose, bounded so a corrupted ledger cannot flood a response. */
export const AUDIT_VIOLATIONS_MAX = 100;
