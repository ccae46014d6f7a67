/**
 * Applies one bank webhook delivery (contract section 5). The signature is checked over the raw bytes
 * first; after that every delivery is answered 200 whatever it held, because a non-2xx only makes the bank
 * retry, and an event that cannot be applied will not become applicable by retrying. Events are
 * deduplicated by the ledger row's state, not by a cache: a duplicate, a redelivery 25 hours later or a
 * stale `charge.failed` after the success changes nothing (case C04).
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { pool } from "../db";
import { env } from "../env";
import { log } from "../log";
import { verifyWebhookSignature, type SignatureFailureReason } from "../bank/signature";
import { parseMerchantRef } from "../bank/merchant-ref";
import { completeEntry, failEntry, findEntryByKey, operationKey, type LedgerEntry } from "../ledger";

const eventSchema = z.object({
  id: z.string().min(1).max(200),
  type: z.enum(["charge.succeeded", "charge.failed"]),
  data: z.object({
    chargeId: z.string().min(1).max(200),
    merchantRef: z.string().min(1).max(400),
    amount: z.number().int().positive(),
    currency: z.string(),
  }),
});

type BankEvent = z.infer<typeof eventSchema>;

/** What the app did with an event; recorded per event id and shown to admins. `anomaly_*` credits nothing. */
export type WebhookOutcome =
  | "credited"
  | "failed"
  | "duplicate"
  | "ignored_terminal"
  | "unusable_event"
  | "anomaly_unknown_merchant_ref"
  | "anomaly_amount_mismatch"
  | "anomaly_currency_mismatch"
  | "anomaly_charge_mismatch"
  | "anomaly_success_for_failed_row";

export type WebhookResult =
  | { readonly kind: "invalid_signature"; readonly reason: SignatureFailureReason }
  | { readonly kind: "received"; readonly outcome: WebhookOutcome };

/**
 * Verifies and applies a delivery. `rawBody` is the request body exactly as received; `signatureHeader`
 * the `Bank-Signature` header (null when absent); `nowSeconds` the verifier's clock in unix seconds.
 * Returns `invalid_signature` (answer 400, nothing changed) or `received` with the outcome (answer 200).
 * Throws on database failures (answer 500, so the bank redelivers later).
 */
export async function handleBankWebhook(
  rawBody: Buffer,
  signatureHeader: string | null,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): Promise<WebhookResult> {
  const verified = verifyWebhookSignature({
    rawBody,
    header: signatureHeader,
    secrets: env().webhookSecrets,
    nowSeconds,
  });
  if (!verified.ok) return { kind: "invalid_signature", reason: verified.reason };

  const text = rawBody.toString("utf8");
  let event: BankEvent;
  try {
    event = eventSchema.parse(JSON.parse(text));
  } catch {
    const syntheticId = `unusable:${createHash("sha256").update(rawBody).digest("hex")}`;
    await recordEvent(syntheticId, null, text, "unusable_event");
    return { kind: "received", outcome: "unusable_event" };
  }

  const outcome = await applyEvent(event);
  await recordEvent(event.id, event, text, outcome);
  if (outcome.startsWith("anomaly_"))
    log().warn({ eventId: event.id, outcome, data: event.data }, "bank webhook anomaly");
  return { kind: "received", outcome };
}

async function applyEvent(event: BankEvent): Promise<WebhookOutcome> {
  const parts = parseMerchantRef(event.data.merchantRef);
  if (!parts) return "anomaly_unknown_merchant_ref";
  const entry = await findEntryByKey(operationKey(parts.userId, "topup", parts.refId));
  if (!entry) return "anomaly_unknown_merchant_ref";
  if (event.data.amount !== entry.amountMinor) return "anomaly_amount_mismatch";
  if (event.data.currency !== entry.currency) return "anomaly_currency_mismatch";
  if (entry.bankChargeId !== null && entry.bankChargeId !== event.data.chargeId) return "anomaly_charge_mismatch";

  const ref = { userId: entry.userId, entryId: entry.id };
  const detail = `event ${event.id}`;
  if (event.type === "charge.succeeded") {
    // Status-only guard: the bank is the source of truth, whoever holds the lease (contract section 2).
    const moved = await completeEntry(ref, {
      actor: "webhook",
      guard: { kind: "status_only" },
      credit: true,
      bankChargeId: event.data.chargeId,
      detail,
    });
    if (moved.kind === "moved") return "credited";
    return terminalOutcome(moved.entry, "succeeded");
  }
  const moved = await failEntry(ref, {
    actor: "webhook",
    guard: { kind: "status_only" },
    reason: "declined_by_bank",
    bankChargeId: event.data.chargeId,
    detail,
  });
  if (moved.kind === "moved") return "failed";
  return terminalOutcome(moved.entry, "failed");
}

function terminalOutcome(entry: LedgerEntry, wanted: "succeeded" | "failed"): WebhookOutcome {
  if (entry.status === wanted) return "duplicate";
  // A success for a row that already failed would mean money taken and not credited: an admin must look.
  if (wanted === "succeeded") return "anomaly_success_for_failed_row";
  // A failure after a success is a stale, reordered delivery: terminal rows do not move (contract section 5).
  return "ignored_terminal";
}

const RECORD_EVENT_SQL = `
INSERT INTO bank_webhook_events (event_id, type, merchant_ref, charge_id, amount_minor, currency, outcome, payload)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (event_id) DO UPDATE
   SET deliveries = bank_webhook_events.deliveries + 1, last_seen_at = now()`;

async function recordEvent(
  eventId: string,
  event: BankEvent | null,
  payload: string,
  outcome: WebhookOutcome,
): Promise<void> {
  await pool().query(RECORD_EVENT_SQL, [
    eventId,
    event?.type ?? "unusable",
    event?.data.merchantRef ?? null,
    event?.data.chargeId ?? null,
    event?.data.amount ?? null,
    event?.data.currency ?? null,
    outcome,
    payload,
  ]);
}
