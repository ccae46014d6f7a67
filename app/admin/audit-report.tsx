import { runAudit } from "@/lib/audit/run-audit";
import { log } from "@/lib/log";

/**
 * What each invariant of contract section 7 promises, in words. The check's code name (what `npm run audit` prints)
 * is the row's `data-check` and its tooltip, not its label (e2e/admin-pages.spec.ts fails on a check without words).
 */
const CHECK_TITLES: Record<string, string> = {
  balance_matches_ledger: "Every balance equals the sum of its ledger",
  no_duplicate_keys: "No operation is recorded twice",
  topups_match_bank_charges: "Every succeeded top-up has its bank charge, and every charge its credit",
  reward_cap: "Rewards stay within the daily cap",
  stored_responses_replayable: "Every stored answer replays the same",
  no_expired_unfinished_rows: "No unfinished operation (a top-up, refund or payout) is left with an expired lease",
  succeeded_charges_credited: "Every charge the bank took is credited exactly once",
  refunds_within_topups: "A top-up's refunds never add up to more than the top-up",
  bank_refunds_recorded: "Every refund at the bank is recorded once, and finished as the bank finished it",
  lost_disputes_charged_back: "Every lost dispute is charged back once, and every reversal credited back once",
  returned_within_charge: "Refunds and chargebacks together never return more than was charged",
  books_balanced: "Every journal transaction balances, and all accounts together sum to zero",
  journal_matches_entries: "Every movement of money is booked exactly once",
  wallet_accounts_match: "Every wallet equals its account in the books, posting by posting",
  bank_clearing_matches_bank: "The bank clearing account equals the bank's movements",
  payouts_match_bank:
    "Every payout the bank paid is booked once, none it failed is booked, and every return is credited once",
  transfers_balanced: "Every transfer between two wallets arrives once, for the amount sent",
};

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
            <li key={check.name} data-check={check.name} data-ok={check.ok} title={`npm run audit: ${check.name}`}>
              <span className={check.ok ? "ok" : "error"} aria-hidden="true">
                {check.ok ? "✓" : "✗"}
              </span>{" "}
              <span className="sr-only">{check.ok ? "Holds:" : "Violated:"}</span>{" "}
              <span className="check-title">{CHECK_TITLES[check.name] ?? check.name}</span>
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
