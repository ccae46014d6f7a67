/**
 * The webhook's door for charge events (`charge.succeeded`, `charge.failed`; contract section 5). Rows are settled
 * by lib/topups/settle-topup.ts, the one settlement function of the request, the webhook and the reconciler; events
 * are deduplicated by the row's state, not by a cache (case C04).
 */
import type { BankCallOptions } from "../bank/client";
import { parseMerchantRef } from "../bank/merchant-ref";
import { withTransaction } from "../db";
import { findEntryByKey, operationKey, type LedgerEntry } from "../ledger";
import { log } from "../log";
import { noteSettleFailure, settleTopup, type ChargeEvidence, type SettlementOutcome } from "../topups/settle-topup";
import type { ChargeEvent } from "./bank-event-schema";
import { creditMatchingTopup } from "./credit-matching-topup";
import { getChargeEvidence } from "./get-charge-evidence";
import { recordWebhookEvent, type ChargeOutcome } from "./record-webhook-event";

/** What became of a charge event, as {@link handleChargeEvent} returns it. */
export type ChargeEventResult =
  /** Answer 200: what the event did, recorded with it. */
  | { readonly kind: "received"; readonly outcome: ChargeOutcome }
  /** A failure could not be confirmed with the bank (answer 503; nothing changed, the bank redelivers). */
  | { readonly kind: "bank_unavailable"; readonly about: "charge_failure"; readonly reason: string };

/**
 * Applies a verified charge event (`text`: its body as received) to the top-up its merchant reference names.
 * - The common case, a success for an unfinished top-up that it matches, is credited and recorded in one statement
 *   (lib/webhooks/credit-matching-topup.ts).
 * - Anything else takes the long way: the row is read, the event turned into evidence (a failure, or a success for a
 *   failed row, is asked of the bank first through `bank`: lib/webhooks/get-charge-evidence.ts, case C14), and the
 *   row settled and the event recorded in one transaction (case C19). A success for a failed row is credited by the
 *   row's `adjustment` entry, once, on the bank's confirmation.
 * - An unknown merchant reference credits nothing and is recorded as an anomaly.
 * Returns `received` with the outcome (answer 200) or `bank_unavailable` (answer 503, nothing changed). Throws
 * database errors (answer 500, so the bank redelivers), after counting a failed settlement on the row.
 */
export async function handleChargeEvent(
  event: ChargeEvent,
  text: string,
  bank: BankCallOptions,
): Promise<ChargeEventResult> {
  const parts = parseMerchantRef(event.data.merchantRef);
  // A database error in the one statement is met again on the long way, which counts it on the row.
  if (parts && event.type === "charge.succeeded" && (await creditMatchingTopup(event, text, parts))) {
    return { kind: "received", outcome: "credited" };
  }
  const entry = parts ? await findEntryByKey(operationKey(parts.userId, "topup", parts.refId)) : null;
  if (!entry) {
    await recordWebhookEvent(
      null,
      event,
      text,
      "anomaly_unknown_merchant_ref",
      "no top-up has this merchant reference",
    );
    log().warn({ eventId: event.id, data: event.data }, "bank webhook anomaly: unknown merchant reference");
    return { kind: "received", outcome: "anomaly_unknown_merchant_ref" };
  }
  const evidence = await getChargeEvidence(event, entry, bank);
  if (evidence.kind === "bank_unavailable") return { ...evidence, about: "charge_failure" };
  if (evidence.kind === "no_move") {
    await recordWebhookEvent(null, event, text, evidence.outcome, evidence.detail);
    return { kind: "received", outcome: evidence.outcome };
  }
  const outcome = await settleAndRecord(event, text, entry, evidence.evidence);
  if (outcome.startsWith("anomaly_"))
    log().warn({ eventId: event.id, outcome, data: event.data }, "bank webhook anomaly");
  return { kind: "received", outcome };
}

/**
 * Settles the row and records the event in one transaction: the delivery that moves the row records what the event
 * did, and a concurrent copy of it waits on the row's lock, then finds the row settled (case C19). A database
 * failure rolls both back, is counted on the row after the rollback, and is rethrown (500: the bank redelivers).
 */
async function settleAndRecord(
  event: ChargeEvent,
  text: string,
  entry: LedgerEntry,
  evidence: ChargeEvidence,
): Promise<ChargeOutcome> {
  try {
    return await withTransaction(async (tx) => {
      const settled = await settleTopup(entry, evidence, {
        actor: "webhook",
        // Status-only guard: the bank is the source of truth, whoever holds the lease (contract section 2).
        guard: { kind: "status_only" },
        detail: `webhook: ${event.type} ${event.id}`,
        db: tx,
      });
      const outcome = chargeOutcome(event, settled);
      await recordWebhookEvent(tx, event, text, outcome, outcomeDetail(event, settled));
      return outcome;
    });
  } catch (error) {
    await noteSettleFailure(entry, error);
    throw error;
  }
}

/** The outcome an event records for a settlement's outcome. */
function chargeOutcome(event: ChargeEvent, settled: SettlementOutcome): ChargeOutcome {
  switch (settled.kind) {
    case "credited":
      return "credited";
    case "failed":
      return "failed";
    case "adjusted":
      return "adjusted";
    case "anomaly":
      return `anomaly_${settled.anomaly.kind}`;
    case "pending":
      return "ignored_stale";
    case "unchanged":
      if (event.type === "charge.failed" && settled.entry.status !== "failed") return "ignored_stale";
      return "duplicate";
  }
}

/** The detail recorded with the outcome: what an admin needs to read it, or null when the outcome says it all. */
function outcomeDetail(event: ChargeEvent, settled: SettlementOutcome): string | null {
  if (settled.kind === "anomaly") return settled.anomaly.detail;
  if (settled.kind === "adjusted")
    return `the top-up had failed: credited by adjustment entry ${settled.adjustment.id}, linked to it`;
  if (event.type !== "charge.failed") return null;
  if (settled.kind === "credited") return "charge.failed not confirmed: the bank reports the charge succeeded";
  if (settled.kind === "pending") return "charge.failed not confirmed: the bank reports the charge pending";
  if (settled.kind === "failed" && settled.entry.failureReason === "expired")
    return "the bank had no charge for this merchant reference; it was cancelled there first";
  return null;
}
