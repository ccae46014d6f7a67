/**
 * The books' bank reconciliation (contract section 13.3; docs/decisions/058): the `bank_clearing` account, charge by
 * charge, equals what the bank itself reports for the charge: its amount if it succeeded, minus its refunds that
 * succeeded, minus its dispute while lost and not reversed. The books' side of a charge is the clearing postings of
 * the entries that moved its money: its top-up (by `bank_charge_id`) or adjustment (keyed by the charge id), the
 * top-up's refunds' settlements, and the dispute's chargeback and reversal (keyed by the dispute id, the charge read
 * from the bank's dispute). Compared per charge, so a difference names the charge; a charge whose last change at the
 * bank is more recent than STUCK_AFTER_S is not judged yet (its webhook or the reconciler may still be on the way),
 * as 7.6 excuses it. Reads the bank's charges and disputes in full and the refunds of each charge the books
 * refunded; an unreadable bank fails the check. Payouts are compared the same way, payout by payout (contract section
 * 14): a payout the bank paid took its amount out of the clearing (its row's `settle`), one it returned put it back
 * (the `payout_return` entry, keyed by the payout's ref id, whose parameters name the bank's payout).
 */
import type { BankCharge } from "../../bank/client";
import type { BankDispute } from "../../bank/disputes";
import { parseMerchantRef } from "../../bank/merchant-ref";
import { listChargeRefunds } from "../../bank/refunds-client";
import { disputeWasLost, disputeWasReversed } from "../../chargebacks/apply-dispute";
import { readAllDisputes } from "../../chargebacks/read-all-disputes";
import { pool } from "../../db";
import type { AuditCheck } from "../types";
import type { BankPayout } from "../../bank/payouts-client";
import { parsePayoutMerchantRef } from "../../bank/merchant-ref";
import { readAllPayouts } from "../../payouts/read-all-payouts";
import { readAllBankCharges } from "./read-bank-charges";
import { checkResult, WHOLE_LEDGER, type AuditBankOptions, type AuditScope } from "./scope";

export const BANK_CLEARING_CHECK_NAME = "bank_clearing_matches_bank";

// $1 user ids or null. The clearing account (an asset: minus the sum of its postings) per charge or per dispute.
const CLEARING_SQL = `
SELECT CASE e.type WHEN 'topup' THEN e.bank_charge_id WHEN 'adjustment' THEN e.ref_id
                   WHEN 'refund' THEN t.bank_charge_id
                   WHEN 'payout' THEN 'payout ' || e.bank_charge_id
                   WHEN 'payout_return' THEN 'payout ' || (e.params->>'payoutId') END AS charge_id,
       CASE WHEN e.type IN ('chargeback', 'chargeback_reversal') THEN e.ref_id END AS dispute_id,
       bool_or(e.type = 'refund') AS refunded,
       (-SUM(p.amount_minor::numeric))::text AS clearing_minor
  FROM ledger_postings p
  JOIN ledger_entries e ON e.user_id = p.user_id AND e.id = p.entry_id
  LEFT JOIN ledger_entries t ON t.user_id = e.user_id AND t.id = e.refunds_entry_id
 WHERE p.account = 'bank_clearing' AND ($1::text[] IS NULL OR p.user_id = ANY ($1::text[]))
 GROUP BY 1, 2`;

/** The key of clearing postings whose entry names no charge (a top-up credited without one). */
const NO_CHARGE = "entries without a bank charge";
/** The key prefix of a dispute's postings when the bank does not report that dispute. */
const UNKNOWN_DISPUTE = "dispute unknown to the bank ";

interface ChargeFigures {
  bankMinor: number;
  booksMinor: number;
  /** The latest change the bank reports for the charge (its creation, a refund's, a dispute's), ms since the epoch. */
  changedMs: number;
  refunded: boolean;
}

/** The books' clearing per charge, the disputes' folded into their charges (unknown disputes keep their own key). */
async function booksByCharge(scope: AuditScope, disputes: BankDispute[]): Promise<Map<string, ChargeFigures>> {
  const chargeOfDispute = new Map(disputes.map((d) => [d.id, d.chargeId]));
  const rows = await pool().query<{
    charge_id: string | null;
    dispute_id: string | null;
    refunded: boolean;
    clearing_minor: string;
  }>(CLEARING_SQL, [scope.userIds]);
  const figures = new Map<string, ChargeFigures>();
  for (const row of rows.rows) {
    const key =
      row.charge_id ??
      (row.dispute_id === null
        ? NO_CHARGE
        : (chargeOfDispute.get(row.dispute_id) ?? `${UNKNOWN_DISPUTE}${row.dispute_id}`));
    const found = figures.get(key) ?? { bankMinor: 0, booksMinor: 0, changedMs: 0, refunded: false };
    found.booksMinor += Number(row.clearing_minor);
    found.refunded ||= row.refunded;
    figures.set(key, found);
  }
  return figures;
}

/** Adds the bank's side of each charge in scope: the charge, its dispute, and (when refunded) its refunds. */
async function addBankSide(
  figures: Map<string, ChargeFigures>,
  charges: BankCharge[],
  disputes: BankDispute[],
  payouts: BankPayout[],
  bank: AuditBankOptions,
  scope: AuditScope,
): Promise<string | null> {
  const inScope = (merchantRef: string) => {
    const userId = parseMerchantRef(merchantRef)?.userId;
    return userId !== undefined && (scope.userIds === null || scope.userIds.includes(userId));
  };
  const at = (iso: string | null) => (iso === null ? 0 : Date.parse(iso) || 0);
  const entry = (chargeId: string) => {
    const found = figures.get(chargeId) ?? { bankMinor: 0, booksMinor: 0, changedMs: 0, refunded: false };
    figures.set(chargeId, found);
    return found;
  };
  for (const charge of charges.filter((c) => inScope(c.merchantRef))) {
    const figure = entry(charge.id);
    if (charge.status === "succeeded") figure.bankMinor += charge.amount;
    figure.changedMs = Math.max(figure.changedMs, at(charge.createdAt));
  }
  for (const dispute of disputes.filter((d) => inScope(d.merchantRef))) {
    const figure = entry(dispute.chargeId);
    if (disputeWasLost(dispute) && !disputeWasReversed(dispute)) figure.bankMinor -= dispute.amount;
    figure.changedMs = Math.max(figure.changedMs, at(dispute.updatedAt));
  }
  for (const payout of payouts) {
    const userId = parsePayoutMerchantRef(payout.merchantRef)?.userId;
    if (userId === undefined || (scope.userIds !== null && !scope.userIds.includes(userId))) continue;
    const figure = entry(`payout ${payout.id}`);
    if (payout.status === "paid") figure.bankMinor -= payout.amount;
    figure.changedMs = Math.max(figure.changedMs, at(payout.updatedAt));
  }
  for (const [chargeId, figure] of figures) {
    if (!figure.refunded) continue;
    const listed = await listChargeRefunds(chargeId, bank);
    if (listed.kind !== "refunds") return `the refunds of charge ${chargeId} cannot be read (${listed.kind})`;
    for (const refund of listed.refunds) {
      if (refund.status === "succeeded") figure.bankMinor -= refund.amount;
      figure.changedMs = Math.max(figure.changedMs, at(refund.createdAt));
    }
  }
  return null;
}

/**
 * The bank clearing check over `scope`, reading the bank at `bank`. `options.stuckAfterS` (STUCK_AFTER_S) excuses a
 * charge the bank changed more recently than that. Violations name the charge and both figures in minor units. An
 * unreadable bank fails the check. Throws only when the database cannot be queried.
 */
export function createBankClearingCheck(
  bank: AuditBankOptions,
  scope: AuditScope = WHOLE_LEDGER,
  options: { readonly stuckAfterS: number; readonly nowMs?: number },
): AuditCheck {
  return {
    name: BANK_CLEARING_CHECK_NAME,
    async run() {
      const [charges, disputes, payouts] = await Promise.all([
        readAllBankCharges(bank),
        readAllDisputes(bank),
        readAllPayouts(bank),
      ]);
      if (charges.kind === "unreachable")
        return checkResult(BANK_CLEARING_CHECK_NAME, [`bank unreachable (${charges.reason}): clearing not compared`]);
      if (charges.kind === "too_many")
        return checkResult(BANK_CLEARING_CHECK_NAME, [
          `the bank lists more than ${charges.pagesRead} pages of charges`,
        ]);
      if (disputes.kind !== "read")
        return checkResult(BANK_CLEARING_CHECK_NAME, [`${disputes.reason}: clearing not compared`]);
      if (payouts.kind !== "read")
        return checkResult(BANK_CLEARING_CHECK_NAME, [`${payouts.reason}: clearing not compared`]);
      const figures = await booksByCharge(scope, disputes.disputes);
      const unreadable = await addBankSide(figures, charges.charges, disputes.disputes, payouts.payouts, bank, scope);
      if (unreadable) return checkResult(BANK_CLEARING_CHECK_NAME, [unreadable]);
      const nowMs = options.nowMs ?? Date.now();
      const violations: string[] = [];
      for (const [chargeId, figure] of figures) {
        if (figure.bankMinor === figure.booksMinor) continue;
        if (nowMs - figure.changedMs < options.stuckAfterS * 1000) continue;
        const what =
          chargeId === NO_CHARGE || chargeId.startsWith(UNKNOWN_DISPUTE) || chargeId.startsWith("payout ")
            ? chargeId
            : `charge ${chargeId}`;
        violations.push(
          `${what}: the bank reports ${figure.bankMinor} held for it, the bank clearing account ${figure.booksMinor}`,
        );
      }
      return checkResult(BANK_CLEARING_CHECK_NAME, violations);
    },
  };
}
