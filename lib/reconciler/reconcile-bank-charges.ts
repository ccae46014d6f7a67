/**
 * The reconciler's bank-to-ledger job (contract sections 5 and 7.2): the bank's charges created since this process's
 * charge cursor (./charge-cursor.ts; 24 h back at first), each brought into agreement with its ledger row. A succeeded
 * charge whose row is missing is claimed under the same key (so it collides with a live request instead of racing
 * it) and credited; an unfinished row is settled; a finished row whose request is gone gets its stored response
 * (case C12); a failed row with a succeeded charge, or any amount or currency mismatch, is an anomaly and credits
 * nothing. Policy (cursor look-back): docs/decisions/003-failure-and-recovery-policy.md.
 */
import { listChargesSince, type BankCharge } from "../bank/client";
import { parseMerchantRef } from "../bank/merchant-ref";
import { pool } from "../db";
import {
  findEntryByKey,
  insertClaimOrLose,
  isTerminal,
  operationKey,
  runClaimedOperation,
  type LedgerEntry,
  type OperationKey,
} from "../ledger";
import { storeFinishedTopupResponse } from "../topups/topup-response";
import { readChargeCursorMs, writeChargeCursorMs } from "./charge-cursor";
import { note, type PassContext } from "./pass-context";
import { isolateRow, rowKey, type Subject } from "./isolate-row";
import { settleAsReconciler } from "./settle-as-reconciler";

/** The bank's largest page (docs/bank-sandbox.md): fewest round trips per pass. */
const CHARGE_PAGE_LIMIT = 1000;

/**
 * Reads the charge list from the cursor, at most `pass.chargePagesMax` pages, and reconciles each charge
 * ({@link reconcileCharge}). The cursor then moves to the oldest charge a later pass must see again, else to the
 * newest one dealt with. Returns false when the list could not be read at all (the bank did not answer, or refused):
 * the cursor then stays where it was.
 */
export async function reconcileBankCharges(pass: PassContext): Promise<boolean> {
  const bankUrl = pass.bank.bankUrl;
  const sinceMs = readChargeCursorMs(bankUrl, pass.lookBackMs);
  const sinceIso = new Date(sinceMs).toISOString();
  // The oldest charge the next pass must see again, and the newest charge dealt with.
  let holdMs: number | null = null;
  let lastSeenMs: number | null = null;
  let startingAfter: string | undefined;
  let readAnyPage = false;

  for (let page = 0; page < pass.chargePagesMax; page++) {
    const listed = await listChargesSince(sinceIso, { ...pass.bank, limit: CHARGE_PAGE_LIMIT, startingAfter });
    if (listed.kind === "unknown") {
      note(pass, { kind: "bank_unknown", outcome: listed, rowsLeft: 0 });
      break;
    }
    if (listed.kind === "rejected") {
      const detail = `GET /charges?since answered ${listed.status} ${listed.code}`;
      note(pass, { kind: "reported", anomaly: { kind: "bank_refused", merchantRef: null, chargeId: null, detail } });
      break;
    }
    readAnyPage = true;
    for (const charge of listed.charges) {
      const createdMs = Date.parse(charge.createdAt);
      const hold = await reconcileCharge(pass, charge);
      if (Number.isFinite(createdMs)) {
        lastSeenMs = createdMs;
        if (hold && holdMs === null) holdMs = createdMs;
      }
    }
    const last = listed.charges.at(-1);
    if (!listed.hasMore || !last) break;
    startingAfter = last.id;
  }

  if (readAnyPage) {
    const next = holdMs ?? lastSeenMs;
    if (next !== null) writeChargeCursorMs(bankUrl, Math.max(next, sinceMs));
  }
  return readAnyPage;
}

/**
 * Reconciles one bank charge with its ledger row. Returns true when the charge must be looked at again by a
 * later pass (the cursor stays at or before it): still pending at the bank, its row still being worked on, a
 * finished row whose response the live request may still store, or a row whose work failed.
 */
async function reconcileCharge(pass: PassContext, charge: BankCharge): Promise<boolean> {
  const parts = parseMerchantRef(charge.merchantRef);
  if (!parts) {
    if (charge.status === "succeeded") {
      note(pass, { kind: "examined" });
      const detail = "a succeeded charge whose merchant reference is not one of our top-ups";
      note(pass, {
        kind: "left",
        anomaly: { kind: "unknown_merchant_ref", merchantRef: charge.merchantRef, chargeId: charge.id, detail },
      });
    }
    return false;
  }
  if (pass.userIds && !pass.userIds.includes(parts.userId)) return false;
  // Pending: nothing to decide yet; the row (if any) is covered by the ledger-to-bank direction meanwhile.
  if (charge.status === "pending") return true;

  const key = operationKey(parts.userId, "topup", parts.refId);
  let hold = false;
  const subject: Subject = { merchantRef: charge.merchantRef, chargeId: charge.id, entry: null };
  const verdict = await isolateRow(pass, subject, async () => {
    const entry = await findEntryByKey(key);
    // Its row failed earlier in this pass: counted once, tried again by a later pass (the cursor waits for it).
    if (entry && pass.erroredRows.has(rowKey(entry))) {
      hold = true;
      return "done";
    }
    subject.entry = entry;
    if (entry) {
      hold = await reconcileExistingRow(pass, entry, charge, "found");
      return "done";
    }
    // A declined charge without a row moved no money: nothing to record.
    if (charge.status !== "succeeded") return "done";
    note(pass, { kind: "examined" });
    const lost = await claimMissingRow(pass, charge, key, subject);
    // Someone else's: a live request (or another reconciler) committed the row while our claim waited on it.
    if (lost) hold = await reconcileExistingRow(pass, lost, charge, "lost_claim");
    return "done";
  });
  // A charge whose work failed is read again by the next pass: the cursor stays at or before it.
  return hold || verdict === "errored";
}

/**
 * Claims the key of a succeeded charge that has no row, exactly as a request would, through the claim runner
 * (lib/ledger `runClaimedOperation`: INSERT ... ON CONFLICT DO NOTHING at READ COMMITTED): if a request holds an
 * uncommitted claim on the key, this waits for it; its commit makes this a loser that reads the request's row without
 * waiting for its response, its rollback lets this claim (contract section 1). A row this pass claimed is ours from
 * the claim on: no request is waiting for it, so it is settled from the charge and its response stored at once.
 * `subject.entry` is the row as soon as there is one (a failure of its settlement is counted on it).
 * Returns the row of the live request that claimed the key first, else null (claimed and settled here, or a charge
 * in another currency than the wallet's, left as an anomaly).
 */
async function claimMissingRow(
  pass: PassContext,
  charge: BankCharge,
  key: OperationKey,
  subject: Subject,
): Promise<LedgerEntry | null> {
  if (charge.currency !== pass.walletCurrency) {
    const detail = `a succeeded charge in ${charge.currency} has no row, and the wallet currency is ${pass.walletCurrency}`;
    note(pass, {
      kind: "left",
      anomaly: { kind: "currency_mismatch", merchantRef: charge.merchantRef, chargeId: charge.id, detail },
    });
    return null;
  }
  // The same parameters as the request path (lib/topups/create-topup.ts), so a later retry of the user's own
  // request with the same amount replays this row instead of being refused as a different operation.
  const params = { amount: charge.amount, currency: charge.currency };
  const run = await runClaimedOperation<null>({
    key,
    params,
    replayCopy: "none",
    waitMs: 0,
    leaseOwner: pass.workerId,
    attempt: async ({ leaseOwner }) => {
      const request = { key, amountMinor: charge.amount, currency: charge.currency, params, leaseMs: pass.leaseMs };
      const entry = await insertClaimOrLose(pool(), { ...request, leaseOwner, actor: "reconciler" });
      return entry ? { kind: "claimed", entry } : { kind: "lost" };
    },
    finish: async (entry) => {
      subject.entry = entry;
      await settleAsReconciler(
        pass,
        entry,
        { source: "bank", charge },
        {
          detail: "reconciler: claimed from a succeeded bank charge",
          storeResponse: true,
          pendingLeft: true,
        },
      );
      return { response: null, replayed: false, detail: null };
    },
  });
  if (run.kind === "won") return null;
  subject.entry = run.entry;
  return run.entry;
}

/**
 * Settles an existing row from a final (succeeded or declined) charge; returns true to hold the cursor.
 * `how` is `lost_claim` when this pass already counted the charge as examined (its claim lost to another).
 */
async function reconcileExistingRow(
  pass: PassContext,
  entry: LedgerEntry,
  charge: BankCharge,
  how: "found" | "lost_claim",
): Promise<boolean> {
  const nowMs = Date.now();
  // The request that claimed the row is gone once its lease has run out (a live request finishes well inside it:
  // LEASE_MS > BANK_TIMEOUT_MS); until then, storing the response is the request's job (contract section 3).
  const requestGone = isTerminal(entry.status)
    ? nowMs - entry.createdAt.getTime() > pass.leaseMs
    : entry.leaseExpiresAt === null || entry.leaseExpiresAt.getTime() < nowMs;
  const agrees =
    (charge.status === "succeeded" && entry.status === "succeeded") ||
    (charge.status === "declined" && entry.status === "failed");
  if (agrees && entry.amountMinor === charge.amount && entry.currency === charge.currency) {
    if (entry.response !== null) return false;
    if (!requestGone) {
      if (how === "lost_claim") note(pass, { kind: "left" });
      return true;
    }
    if (how === "found") note(pass, { kind: "examined" });
    await storeFinishedTopupResponse(entry);
    note(pass, { kind: "left" });
    return false;
  }
  if (how === "found") note(pass, { kind: "examined" });
  // A terminal row that disagrees is reported (settle refuses to move a terminal row and says why).
  const settled = await settleAsReconciler(
    pass,
    entry,
    { source: "bank", charge },
    {
      detail: "reconciler: from the bank's charge list",
      storeResponse: !isTerminal(entry.status) && requestGone,
      pendingLeft: true,
    },
  );
  // An anomaly is reported, not retried: it does not hold the cursor (the audit keeps reporting it).
  if (isTerminal(entry.status) || settled.kind === "anomaly") return false;
  // Hold while the row is unfinished, or finished without a response that its live request has yet to store.
  return !isTerminal(settled.entry.status) || (!requestGone && settled.entry.response === null);
}
