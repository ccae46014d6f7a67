/**
 * The reconciler's ledger-to-bank job (contract sections 2, 5 and 7.5): unfinished rows whose lease expired are taken
 * over, one at a time, and finished from the bank's word, re-driven, or cancelled at the bank and then failed.
 * Policy (re-drive window, cancel-then-fail-as-expired): docs/decisions/003-failure-and-recovery-policy.md.
 */
import { cancelCharge, createCharge, getCharge, type UnknownOutcome } from "../bank/client";
import { takeOverExpiredEntry, type LedgerEntry, type TakenOverEntry } from "../ledger";
import { reconcilePayoutEntry, type PayoutReconcileOutcome } from "../payouts/reconcile-payout";
import { reconcileRefundEntry, type RefundReconcileOutcome } from "../refunds/reconcile-refund";
import { admitTopup } from "../topups/admit-topup";
import { note, type PassContext } from "./pass-context";
import { isolateRow, merchantRefOfEntry, subjectOf, type RowVerdict, type Subject } from "./isolate-row";
import { inRowTransaction } from "./row-guard";
import { settleAsReconciler } from "./settle-as-reconciler";

/**
 * Takes over, one at a time, unfinished rows whose lease expired (at most `pass.rowsMax`, only `pass.userIds`' when
 * set), and finishes each (see {@link reconcileTakenOverEntry}). A row whose work fails is counted on it and left; the
 * loop goes on with the next row (case C29). Returns true when the bank could not be read and the job stopped early
 * (the rows it did not reach are left for a later pass).
 */
export async function reconcileUnfinishedEntries(pass: PassContext): Promise<boolean> {
  for (let taken = 0; taken < pass.rowsMax; taken++) {
    const row = await takeOverExpiredEntry({ workerId: pass.workerId, leaseMs: pass.leaseMs, userIds: pass.userIds });
    if (!row) return false;
    note(pass, { kind: "examined" });
    const subject = subjectOf(row.entry);
    const verdict = await isolateRow(pass, subject, () => reconcileTakenOverEntry(pass, row, subject));
    if (verdict === "bank_down") return true;
  }
  return false;
}

/** The bank did not answer about one row: the row is left for a later pass, and reported (contract section 7.5). */
function leaveForTheBank(pass: PassContext, outcome: UnknownOutcome): void {
  note(pass, { kind: "left" });
  note(pass, { kind: "bank_unknown", outcome, rowsLeft: 1 });
}

/**
 * One row taken over. A refund is asked again at the bank ({@link reconcileRefundRow}); a top-up's charge is looked up
 * by its merchant reference: `succeeded`/`declined` settles it, `pending` leaves it (charge id attached); no charge
 * re-drives a row younger than the re-drive window and cancels the key of an older one; an unreadable bank leaves the
 * row and stops the job. Any other type is an anomaly and left alone (rewards and payments finish in one statement).
 */
async function reconcileTakenOverEntry(pass: PassContext, row: TakenOverEntry, subject: Subject): Promise<RowVerdict> {
  const { entry } = row;
  if (entry.type === "refund") return await reconcileHeldRow(pass, entry, await reconcileRefundEntry(entry, pass.bank));
  if (entry.type === "payout") return await reconcileHeldRow(pass, entry, await reconcilePayoutEntry(entry, pass.bank));
  const merchantRef = merchantRefOfEntry(entry);
  if (entry.type !== "topup" || merchantRef === null) {
    const detail =
      entry.type !== "topup"
        ? `${entry.type} ${entry.refId} of user ${entry.userId} is ${entry.status}; rewards and payments finish in one transaction`
        : `top-up ${entry.refId} of user ${entry.userId} has no valid merchant reference`;
    const kind = entry.type !== "topup" ? "unfinished_non_topup" : "invalid_merchant_ref";
    note(pass, { kind: "left", anomaly: { kind, merchantRef: null, chargeId: null, detail } });
    return "done";
  }
  const looked = await getCharge(merchantRef, pass.bank);
  switch (looked.kind) {
    case "found":
      subject.chargeId = looked.charge.id;
      await settleAsReconciler(
        pass,
        entry,
        { source: "bank", charge: looked.charge },
        {
          detail: "reconciler: from the bank's charge after the lease expired",
          storeResponse: true,
          pendingLeft: true,
        },
      );
      return "done";
    case "not_found":
      // The bank has no charge for this key: the request never reached it (or its call is lost for good).
      if (row.ageMs < pass.redriveWindowMs) return await redrive(pass, entry, merchantRef);
      return await cancelThenExpire(pass, entry, merchantRef);
    case "unknown":
      // A read failed: the bank is down or unreadable. Leave this row (and the rest) for a later pass.
      leaveForTheBank(pass, looked);
      return "bank_down";
    case "rejected":
      note(pass, {
        kind: "left",
        anomaly: {
          kind: "bank_refused",
          merchantRef,
          chargeId: null,
          detail: `GET /charges answered ${looked.status} ${looked.code}`,
        },
      });
      return "done";
  }
}

/**
 * What asking the bank again did to a row whose claim holds money: a refund (contract section 11, asked by
 * lib/refunds/reconcile-refund.ts) or a payout (section 14, lib/payouts/reconcile-payout.ts).
 */
async function reconcileHeldRow(
  pass: PassContext,
  entry: LedgerEntry,
  outcome: RefundReconcileOutcome | PayoutReconcileOutcome,
): Promise<RowVerdict> {
  switch (outcome.kind) {
    case "completed":
    case "failed":
      note(pass, { kind: outcome.kind });
      return "done";
    case "bank_down":
      leaveForTheBank(pass, { kind: "unknown", reason: "network", detail: outcome.reason });
      return "bank_down";
    case "anomaly": {
      // Its key at the bank is the row's own (`refund:<userId>:<refundId>`, `payout:<userId>:<refId>`), never a top-up's.
      const anomaly = { merchantRef: merchantRefOfEntry(entry), chargeId: entry.bankChargeId, detail: outcome.detail };
      note(pass, { kind: "left", anomaly: { kind: "bank_refused", ...anomaly } });
      return "done";
    }
    default:
      note(pass, { kind: "left" });
      return "done";
  }
}

/**
 * Sends the charge again with the same Idempotency-Key: the bank makes at most one charge per key. A row that never
 * got past `initiated` passes the same headroom gate as a live request first (contract section 5, case C15).
 */
async function redrive(pass: PassContext, entry: LedgerEntry, merchantRef: string): Promise<RowVerdict> {
  if (entry.status === "initiated") {
    // Records that the bank may be called from here on, or fails the row with its stored 422 when there is no room.
    const admission = await inRowTransaction(pass.rowStatementTimeoutMs, (db) =>
      admitTopup(entry, entry.fencingToken, "reconciler", db),
    );
    if (admission.kind !== "admitted") {
      note(pass, { kind: admission.kind === "no_room" ? "failed" : "left" });
      return "done";
    }
  }
  const created = await createCharge(
    { merchantRef, amountMinor: entry.amountMinor, currency: entry.currency },
    pass.bank,
  );
  if (created.kind === "charge") {
    note(pass, { kind: "redriven" });
    // A re-driven row counts as re-driven: a charge still pending leaves no second count.
    const settlement = { detail: "reconciler: re-driven to the bank", storeResponse: true, pendingLeft: false };
    await settleAsReconciler(pass, entry, { source: "bank", charge: created.charge }, settlement);
  } else if (created.kind === "rejected" && created.status === 409 && created.code === "idempotency_key_cancelled") {
    // An earlier pass cancelled the key and stopped before failing the row: no charge exists or ever will.
    const settlement = {
      detail: "reconciler: the merchant reference was already cancelled at the bank",
      storeResponse: true,
      pendingLeft: true,
    };
    await settleAsReconciler(pass, entry, { source: "key_cancelled" }, settlement);
  } else if (created.kind === "rejected") {
    const detail = `re-drive answered ${created.status} ${created.code}`;
    note(pass, { kind: "left", anomaly: { kind: "bank_refused", merchantRef, chargeId: null, detail } });
  } else {
    // The charge may or may not exist now; the row stays as it is and the next pass asks the bank again.
    leaveForTheBank(pass, created);
  }
  return "done";
}

/**
 * Past the re-drive window: make the key unusable at the bank first, and fail the row only when the bank
 * confirms that no charge exists. A charge that appears in between (a request stuck in the network) is found by
 * the cancel itself, and the row is settled from it instead.
 */
async function cancelThenExpire(pass: PassContext, entry: LedgerEntry, merchantRef: string): Promise<RowVerdict> {
  const cancelled = await cancelCharge(merchantRef, pass.bank);
  switch (cancelled.kind) {
    case "cancelled":
      await settleAsReconciler(
        pass,
        entry,
        { source: "key_cancelled" },
        {
          detail: "reconciler: never reached the bank; merchant reference cancelled there after the re-drive window",
          storeResponse: true,
          pendingLeft: true,
        },
      );
      return "done";
    case "charge_exists":
      await settleAsReconciler(
        pass,
        entry,
        { source: "bank", charge: cancelled.charge },
        {
          detail: "reconciler: charge found while cancelling",
          storeResponse: true,
          pendingLeft: true,
        },
      );
      return "done";
    case "unknown":
      leaveForTheBank(pass, cancelled);
      return "done";
    case "rejected": {
      const detail = `cancel answered ${cancelled.status} ${cancelled.code}`;
      note(pass, { kind: "left", anomaly: { kind: "bank_refused", merchantRef, chargeId: null, detail } });
      return "done";
    }
  }
}
