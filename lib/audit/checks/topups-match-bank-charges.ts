/**
 * Contract section 7.2, second half: every succeeded top-up has a succeeded bank charge of the same amount, and
 * every succeeded bank charge has exactly one succeeded top-up or exactly one `adjustment` entry (after a reconciler
 * pass), or is listed here. An adjustment credits the charge of a top-up that had already failed (contract section
 * 5); a top-up credited both ways, or an adjustment without its succeeded charge, is listed too.
 *
 * A succeeded charge whose row is still unfinished under a live lease is in flight (its request or webhook is
 * finishing it right now), not a violation; once the lease has expired it is one until the reconciler settles it.
 * The bank must be reachable: when it is not, the check fails with "bank unreachable" instead of guessing.
 */
import { parseMerchantRef, merchantRefFor } from "../../bank/merchant-ref";
import type { BankCharge } from "../../bank/client";
import type { AuditCheck } from "../types";
import { readAllBankCharges } from "./read-bank-charges";
import { adjustmentCredits, readTopupCredits, type TopupCreditRow } from "./read-topup-credits";
import { checkResult, WHOLE_LEDGER, type AuditBankOptions, type AuditScope } from "./scope";

export const BANK_CHARGES_CHECK_NAME = "topups_match_bank_charges";

function describeCharge(charge: BankCharge): string {
  return `charge ${charge.id} (${charge.merchantRef}, ${charge.amount} ${charge.currency})`;
}

/**
 * The top-up/charge check (7.2) over `scope`, reading the bank at `bank`. Throws only when the database cannot
 * be queried; an unreachable bank is a failed check.
 */
export function createTopupsMatchBankChargesCheck(
  bank: AuditBankOptions,
  scope: AuditScope = WHOLE_LEDGER,
): AuditCheck {
  return {
    name: BANK_CHARGES_CHECK_NAME,
    async run() {
      const read = await readAllBankCharges(bank);
      if (read.kind === "unreachable")
        return checkResult(BANK_CHARGES_CHECK_NAME, [`bank unreachable (${read.reason}): charges cannot be compared`]);
      if (read.kind === "too_many") {
        return checkResult(BANK_CHARGES_CHECK_NAME, [
          `the bank lists more than ${read.pagesRead} pages of charges: this audit does not compare that many`,
        ]);
      }
      const inScope = (userId: string) => scope.userIds === null || scope.userIds.includes(userId);
      const rows = await readTopupCredits(scope);
      const byRef = new Map<string, TopupCreditRow>();
      for (const row of rows) {
        try {
          byRef.set(merchantRefFor(row.user_id, row.ref_id), row);
        } catch {
          // A key that cannot be a merchant reference never reached the bank; checked below if it succeeded.
        }
      }
      const chargeByRef = new Map<string, BankCharge>();
      const violations: string[] = [];

      for (const charge of read.charges) {
        const parts = parseMerchantRef(charge.merchantRef);
        if (parts && !inScope(parts.userId)) continue;
        if (!parts && scope.userIds !== null) continue;
        chargeByRef.set(charge.merchantRef, charge);
        if (charge.status !== "succeeded") continue;
        if (!parts) {
          violations.push(`${describeCharge(charge)} succeeded but its merchant reference is not one of our top-ups`);
          continue;
        }
        const row = byRef.get(charge.merchantRef);
        if (!row) {
          violations.push(`${describeCharge(charge)} succeeded but has no top-up row`);
        } else if (row.status === "failed") {
          if (!adjustmentCredits(row, charge))
            violations.push(
              `${describeCharge(charge)} succeeded but its top-up failed and no adjustment credits it: money taken, nothing credited`,
            );
        } else if (row.status !== "succeeded") {
          if (!row.in_flight)
            violations.push(
              `${describeCharge(charge)} succeeded but its top-up is still ${row.status} with an expired lease`,
            );
        } else if (row.amount_minor !== charge.amount || row.currency !== charge.currency) {
          violations.push(
            `${describeCharge(charge)} succeeded but its top-up credited ${row.amount_minor} ${row.currency}`,
          );
        } else if (row.bank_charge_id !== null && row.bank_charge_id !== charge.id) {
          violations.push(`${describeCharge(charge)} succeeded but its top-up records charge ${row.bank_charge_id}`);
        }
      }

      for (const row of rows) {
        if (row.status !== "succeeded" && row.adjustment_status !== "succeeded") continue;
        let merchantRef: string;
        try {
          merchantRef = merchantRefFor(row.user_id, row.ref_id);
        } catch {
          violations.push(
            `top-up ${row.ref_id} of user ${row.user_id} succeeded but its reference cannot be a merchant reference`,
          );
          continue;
        }
        const charge = chargeByRef.get(merchantRef);
        if (row.adjustment_status === "succeeded") {
          if (row.status === "succeeded")
            violations.push(`top-up ${merchantRef} is credited twice: by the top-up and by its adjustment`);
          else if (!charge || !adjustmentCredits(row, charge))
            violations.push(
              `top-up ${merchantRef} has an adjustment crediting ${row.adjustment_minor} for charge ${row.adjustment_charge_id}, which the bank does not report as that succeeded charge`,
            );
          continue;
        }
        if (!charge)
          violations.push(`top-up ${merchantRef} credited ${row.amount_minor} ${row.currency} without any bank charge`);
        else if (charge.status !== "succeeded")
          violations.push(
            `top-up ${merchantRef} credited ${row.amount_minor} ${row.currency} but the bank's charge ${charge.id} is ${charge.status}`,
          );
      }
      return checkResult(BANK_CHARGES_CHECK_NAME, violations);
    },
  };
}
