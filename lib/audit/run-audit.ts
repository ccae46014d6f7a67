/**
 * The invariant audit (contract section 7): runs every check and reports `{ ok, checks: [{ name, ok, violations }] }`.
 * `npm run audit`, `GET /api/v1/admin/audit`, the admin page and the tests all call {@link runAudit}.
 */
import { env } from "../env";
import type { z } from "zod";
import type { AuditCheck, AuditCheckResult, auditReportSchema } from "./types";
import { createBalanceCheck } from "./checks/balance-matches-ledger";
import { createUniqueKeysCheck } from "./checks/unique-keys";
import { createTopupsMatchBankChargesCheck } from "./checks/topups-match-bank-charges";
import { createStoredResponsesCheck } from "./checks/stored-responses";
import { createNoExpiredUnfinishedRowsCheck } from "./checks/no-expired-unfinished-rows";
import type { AuditScope } from "./checks/scope";
import { createRewardCapCheck, rewardCapCheck } from "./checks/reward-cap";
import { createSucceededChargesCreditedCheck } from "./checks/succeeded-charges-credited";
import { createBankRefundsRecordedCheck, createRefundsWithinTopupsCheck } from "./checks/refunds";
import { createReturnedWithinChargeCheck } from "./checks/returned-within-charge";
import { createDisputesCheck } from "../chargebacks/audit-disputes";
import { createBankClearingCheck } from "./checks/bank-clearing";
import { createPayoutsCheck } from "./checks/payouts";
import { createTransfersCheck } from "./checks/transfers";
import { createBooksBalancedCheck, createJournalMatchesEntriesCheck, createWalletAccountsCheck } from "./checks/books";

/** `{ ok, checks }`: the OpenAPI document's `AuditReport` (./types.ts); `ok` is true when every check holds. */
export type AuditReport = z.infer<typeof auditReportSchema>;

export interface RunAuditOptions {
  /** Only these users' rows (and their merchant references at the bank); default every user. */
  userIds?: readonly string[];
  /** Default env BANK_URL. */
  bankUrl?: string;
  /** Budget of one bank call, ms. Default env BANK_TIMEOUT_MS. */
  bankTimeoutMs?: number;
  /** Run these checks instead of {@link defaultAuditChecks} (tests; a subset for the admin page). */
  checks?: readonly AuditCheck[];
}

/**
 * The checks of contract section 7, in its order: 7.1 balances, 7.2 unique keys and top-ups against bank
 * charges, 7.3 the reward cap (lib/audit/checks/reward-cap.ts), 7.4 stored responses, 7.5 expired leases, 7.6 every
 * charge that succeeded more than STUCK_AFTER_S ago credited exactly once, whatever its lease; then contract section
 * 11's refunds: within their top-ups, and every bank refund recorded once (and, once the bank finished it, finished
 * in the ledger); then section 12's lost disputes, each charged back exactly once (lib/chargebacks/audit-disputes.ts);
 * then refunds and chargebacks of one charge together within it (case C26); then section 13's books
 * (lib/audit/checks/books.ts): balanced transactions, one per money-moving event, wallets equal to their accounts;
 * and the bank clearing account equal, charge by charge, to what the bank reports (lib/audit/checks/bank-clearing.ts).
 *
 * The reward-cap check (7.3) is `rewardCapCheck` (whole ledger, REDIS_URL's counters); a scoped audit
 * uses the same check built for those users.
 */
export function defaultAuditChecks(options: Omit<RunAuditOptions, "checks"> = {}): AuditCheck[] {
  const settings = env();
  const scope: AuditScope = { userIds: options.userIds ? [...options.userIds] : null };
  const bank = {
    bankUrl: options.bankUrl ?? settings.BANK_URL,
    timeoutMs: options.bankTimeoutMs ?? settings.BANK_TIMEOUT_MS,
  };
  const checks: AuditCheck[] = [
    createBalanceCheck(scope),
    createUniqueKeysCheck(scope),
    createTopupsMatchBankChargesCheck(bank, scope),
  ];
  checks.push(scope.userIds === null ? rewardCapCheck : createRewardCapCheck({ userIds: scope.userIds }));
  checks.push(
    createStoredResponsesCheck(scope),
    createNoExpiredUnfinishedRowsCheck(bank, scope),
    createSucceededChargesCreditedCheck(bank, scope, { stuckAfterS: settings.STUCK_AFTER_S }),
    // Contract section 11: refunds.
    createRefundsWithinTopupsCheck(scope),
    createBankRefundsRecordedCheck(bank, scope, { stuckAfterS: settings.STUCK_AFTER_S }),
    // Contract section 12: every lost dispute charged back once (and every reversal credited back once).
    createDisputesCheck(bank, scope, { stuckAfterS: settings.STUCK_AFTER_S }),
    // Sections 11 and 12 together (case C26): refunds and chargebacks never return more than the charge.
    createReturnedWithinChargeCheck(scope),
    // Contract section 13: the books.
    createBooksBalancedCheck(scope),
    createJournalMatchesEntriesCheck(scope),
    createWalletAccountsCheck(scope),
    createBankClearingCheck(bank, scope, { stuckAfterS: settings.STUCK_AFTER_S }),
    // Contract sections 14 and 15: money out and between people.
    createPayoutsCheck(bank, scope, { stuckAfterS: settings.STUCK_AFTER_S }),
    createTransfersCheck(scope),
  );
  return checks;
}

/**
 * Runs the checks one after another (each is a few bounded queries; running them in sequence keeps the audit's
 * load on a live database small) and reports every result.
 *
 * Returns `{ ok, checks }`: `ok` is true when every check holds. A violated invariant is a result, not an error;
 * an unreachable bank is a failed check. Throws when a check cannot run at all (the database is unreachable),
 * naming the check.
 */
export async function runAudit(options: RunAuditOptions = {}): Promise<AuditReport> {
  const checks = options.checks ?? defaultAuditChecks(options);
  const results: AuditCheckResult[] = [];
  for (const check of checks) {
    try {
      results.push(await check.run());
    } catch (error) {
      throw new Error(`audit check ${check.name} could not run`, { cause: error });
    }
  }
  return { ok: results.every((result) => result.ok), checks: results };
}
