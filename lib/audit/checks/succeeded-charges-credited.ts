/**
 * Contract section 7.6: every bank charge that succeeded more than STUCK_AFTER_S ago is credited exactly once, by its
 * top-up or by one `adjustment` entry. A renewed lease does not excuse it: case C15's row stayed `processing` while
 * the reconciler renewed its lease on every pass and every credit failed in the database, and a check that reads a
 * live lease as "in flight" (7.2 does, for young charges) never saw it. The row's failed settlements and flag are
 * named in the violation, so an admin sees why.
 *
 * The age is the charge's creation time at the bank (the protocol reports no settlement time): a charge created more
 * than STUCK_AFTER_S ago that succeeded at any point has had at least that long to be credited, give or take how
 * long it stayed pending.
 */
import { parseMerchantRef } from "../../bank/merchant-ref";
import type { BankCharge } from "../../bank/client";
import type { AuditCheck } from "../types";
import { readAllBankCharges } from "./read-bank-charges";
import { adjustmentCredits, readTopupCredits, type TopupCreditRow } from "./read-topup-credits";
import { checkResult, WHOLE_LEDGER, type AuditBankOptions, type AuditScope } from "./scope";

export const SUCCEEDED_CHARGES_CHECK_NAME = "succeeded_charges_credited";

export interface SucceededChargesCheckOptions {
  /** STUCK_AFTER_S: charges created more recently than this many seconds ago are not judged yet. */
  readonly stuckAfterS: number;
  /**
   * Skip rows whose lease is live, as a check that trusts leases would. Never set by the app: it exists only for the
   * negative control that shows this check is what catches a row kept alive by renewed leases
   * (tests/integration/settle-flagged-audit.test.ts).
   */
  readonly excuseLiveLeases?: boolean;
  /** The clock, ms since the epoch. Default now. */
  readonly nowMs?: number;
}

/** How many times `row` credits `charge`: its own success (same amount, no other charge id) plus its adjustment. */
function creditsOf(row: TopupCreditRow, charge: BankCharge): number {
  const byTopup =
    row.status === "succeeded" &&
    row.amount_minor === charge.amount &&
    (row.bank_charge_id === null || row.bank_charge_id === charge.id);
  return (byTopup ? 1 : 0) + (adjustmentCredits(row, charge) ? 1 : 0);
}

function describeRow(row: TopupCreditRow): string {
  const parts = [`top-up ${row.status}`];
  if (row.lease_expires_at && (row.status === "initiated" || row.status === "processing"))
    parts.push(`lease ${row.in_flight ? "live" : "expired"} until ${row.lease_expires_at.toISOString()}`);
  if (row.settle_failures > 0) parts.push(`${row.settle_failures} failed settlement(s)`);
  if (row.settle_flagged_at) parts.push(`flagged ${row.settle_flagged_at.toISOString()}`);
  if (row.settle_last_error) parts.push(`last error: ${row.settle_last_error}`);
  if (row.adjustment_status) parts.push(`adjustment ${row.adjustment_status}`);
  return parts.join(", ");
}

/**
 * The 7.6 check over `scope`, reading the bank at `bank`: each succeeded charge created more than
 * `options.stuckAfterS` seconds ago must be credited exactly once. Violations name the charge, its merchant reference,
 * its age, how many times it is credited and the row's state (lease, failed settlements, flag, last error). An
 * unreachable bank fails the check. Throws only when the database cannot be queried.
 */
export function createSucceededChargesCreditedCheck(
  bank: AuditBankOptions,
  scope: AuditScope = WHOLE_LEDGER,
  options: SucceededChargesCheckOptions,
): AuditCheck {
  return {
    name: SUCCEEDED_CHARGES_CHECK_NAME,
    async run() {
      const read = await readAllBankCharges(bank);
      if (read.kind === "unreachable")
        return checkResult(SUCCEEDED_CHARGES_CHECK_NAME, [
          `bank unreachable (${read.reason}): charges cannot be judged`,
        ]);
      if (read.kind === "too_many")
        return checkResult(SUCCEEDED_CHARGES_CHECK_NAME, [
          `the bank lists more than ${read.pagesRead} pages of charges: this audit does not judge that many`,
        ]);
      const rows = await readTopupCredits(scope);
      const byKey = new Map(rows.map((row) => [`${row.user_id}\n${row.ref_id}`, row]));
      const nowMs = options.nowMs ?? Date.now();
      const violations: string[] = [];
      for (const charge of read.charges) {
        if (charge.status !== "succeeded") continue;
        const ageS = Math.floor((nowMs - Date.parse(charge.createdAt)) / 1000);
        // A charge whose time cannot be read is judged (never excused by a bad field).
        if (Number.isFinite(ageS) && ageS < options.stuckAfterS) continue;
        const parts = parseMerchantRef(charge.merchantRef);
        if (!parts || (scope.userIds !== null && !scope.userIds.includes(parts.userId))) {
          if (!parts && scope.userIds === null)
            violations.push(
              `charge ${charge.id} (${charge.merchantRef}) succeeded ${ageS} s ago for no top-up of ours`,
            );
          continue;
        }
        const row = byKey.get(`${parts.userId}\n${parts.refId}`);
        if (!row) {
          violations.push(`charge ${charge.id} (${charge.merchantRef}) succeeded ${ageS} s ago and has no top-up row`);
          continue;
        }
        if (options.excuseLiveLeases && row.in_flight) continue;
        const credits = creditsOf(row, charge);
        if (credits !== 1)
          violations.push(
            `charge ${charge.id} (${charge.merchantRef}, ${charge.amount} ${charge.currency}) succeeded ${ageS} s ago and is credited ${credits} times (${describeRow(row)})`,
          );
      }
      return checkResult(SUCCEEDED_CHARGES_CHECK_NAME, violations);
    },
  };
}
