import { runAudit } from "@/lib/audit/run-audit";
import { log } from "@/lib/log";

/**
 * The invariant report (contract section 7), rendered on the server. It reads the whole ledger and the bank's
 * charge list, so the page streams it inside a Suspense boundary instead of waiting for it.
 */
export async function AuditReport() {
  let report: Awaited<ReturnType<typeof runAudit>>;
  try {
    report = await runAudit();
  } catch (error) {
    // Read-only: nothing is left half-done. The message names the check that could not run; details go to the log.
    log().error({ err: error }, "admin page: audit could not run");
    return (
      <p role="alert" data-testid="audit-error">
        The audit could not run: {error instanceof Error ? error.message : "unknown error"}.
      </p>
    );
  }
  return (
    <div data-testid="audit" data-ok={report.ok}>
      <p className={report.ok ? "ok" : "error"}>
        {report.ok ? "Every invariant holds." : "Some invariants are violated."}
      </p>
      <ul className="checks">
        {report.checks.map((check) => {
          const notes = (check as { notes?: string[] }).notes ?? [];
          return (
            <li key={check.name} data-check={check.name} data-ok={check.ok}>
              <span className={check.ok ? "ok" : "error"}>{check.ok ? "✓" : "✗"}</span> <code>{check.name}</code>
              {check.violations.length > 0 && (
                <ul>
                  {check.violations.map((violation, index) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: a list rendered once from one response, never reordered
                    <li key={index}>{violation}</li>
                  ))}
                </ul>
              )}
              {notes.length > 0 && (
                <ul className="notes">
                  {notes.map((note, index) => (
                    // biome-ignore lint/suspicious/noArrayIndexKey: a list rendered once from one response, never reordered
                    <li key={index}>{note}</li>
                  ))}
                </ul>
              )}
            </li>
          );
        })}
      </ul>
    </div>
  );
}
