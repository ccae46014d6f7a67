/**
 * What an audit looks at. By default everything; an admin (or a test sharing a database with other tests) can
 * restrict the ledger checks to some users. The bank's charges are then filtered to those users' merchant
 * references.
 */
import { AUDIT_VIOLATIONS_MAX, type AuditCheckResult } from "../types";

export interface AuditScope {
  /** Only these users; null = every user. */
  readonly userIds: readonly string[] | null;
}

export const WHOLE_LEDGER: AuditScope = { userIds: null };

/** Where the bank is, for the checks that read it (contract section 4: BANK_URL; BANK_TIMEOUT_MS per call). */
export interface AuditBankOptions {
  readonly bankUrl: string;
  readonly timeoutMs: number;
}

/** A check result that may also carry notes: facts worth showing that are not violations. */
export interface AuditCheckReport extends AuditCheckResult {
  readonly notes?: string[];
}

/**
 * Builds a result from the violations found (`total` may exceed the list when a query was bounded): at most
 * {@link AUDIT_VIOLATIONS_MAX} lines, the last one saying how many more there were when they do not all fit.
 */
export function checkResult(
  name: string,
  violations: string[],
  total: number = violations.length,
  notes: string[] = [],
): AuditCheckReport {
  const count = Math.max(total, violations.length);
  const fits = count <= AUDIT_VIOLATIONS_MAX;
  const listed = violations.slice(0, fits ? AUDIT_VIOLATIONS_MAX : AUDIT_VIOLATIONS_MAX - 1);
  if (!fits) listed.push(`... and ${count - listed.length} more`);
  const result: AuditCheckReport = { name, ok: total === 0 && violations.length === 0, violations: listed };
  return notes.length > 0 ? { ...result, notes } : result;
}
