/**
 * Applies one bank webhook delivery (contract section 5). The signature is checked over the raw bytes
 * first; after that every delivery is answered 200 whatever it held, because a non-2xx only makes the bank
 * retry, and an event that cannot be applied will not become applicable by retrying. Events are
 * deduplicated by the ledger row's state, not by a cache: a duplicate, a redelivery 25 hours later or a
 * stale `charge.failed` after the success changes nothing (case C04).
 *
 * A signed event is still a claim about its fields: each one is checked for shape and bounds before it is read
 * (an unusable event is recorded as such and never reaches a query that PostgreSQL could refuse, case C18), and
 * the outcome recorded for an event is the one of the delivery that applied it, written in the same transaction
 * as the row's move (case C19).
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { pool, withTransaction } from "../db";
import { env } from "../env";
import { log } from "../log";
import { verifyWebhookSignature, type SignatureFailureReason } from "../bank/signature";
import { parseMerchantRef } from "../bank/merchant-ref";
import {
  completeEntry,
  failEntry,
  findEntryByKey,
  operationKey,
  type LedgerEntry,
  type TransitionOutcome,
} from "../ledger";
import type { Queryable } from "../ledger/queryable";

/** Printable ASCII without spaces, 1..`max` characters: ids and references as the bank writes them. */
const printable = (max: number) => z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), "printable ASCII");

/**
 * What an event must look like to be read at all (the OpenAPI document's `BankEvent`). Bounds: ids of 200 characters are far above any provider's
 * (the sandbox's are 28); a merchant reference is at most 400 (lib/bank/merchant-ref.ts); amounts are positive
 * integers JavaScript represents exactly. Anything else is unusable (case C18).
 */
export const bankEventSchema = z
  .object({
    id: printable(200),
    type: z.enum(["charge.succeeded", "charge.failed"]),
    data: z.object({
      chargeId: printable(200),
      merchantRef: printable(400),
      amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
      currency: z.string().regex(/^[A-Z]{3}$/, "ISO 4217 code"),
    }),
  })
  .meta({ id: "BankEvent" });

type BankEvent = z.infer<typeof bankEventSchema>;

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

/** Outcomes that mean "this delivery applied the event": the recorded outcome of its event, whoever came first. */
const APPLIED_OUTCOMES: readonly WebhookOutcome[] = ["credited", "failed"];

export type WebhookResult =
  | { readonly kind: "invalid_signature"; readonly reason: SignatureFailureReason }
  | { readonly kind: "received"; readonly outcome: WebhookOutcome };

/**
 * Verifies and applies a delivery. `rawBody` is the request body exactly as received (already bounded by
 * WEBHOOK_BODY_LIMIT_BYTES); `signatureHeader` the `Bank-Signature` header (null when absent); `nowSeconds` the
 * verifier's clock in unix seconds.
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

  const parsed = parseEvent(rawBody);
  if (parsed.kind === "unusable") {
    await recordUnusableEvent(rawBody, parsed);
    log().warn({ reason: parsed.reason }, "bank webhook: unusable signed event recorded");
    return { kind: "received", outcome: "unusable_event" };
  }
  const { event, text } = parsed;
  const outcome = await applyEvent(event, text);
  if (outcome.startsWith("anomaly_"))
    log().warn({ eventId: event.id, outcome, data: event.data }, "bank webhook anomaly");
  return { kind: "received", outcome };
}

type ParsedEvent =
  | { kind: "event"; event: BankEvent; text: string }
  | { kind: "unusable"; reason: string; value: unknown; text: string };

/** Decodes (strict UTF-8), parses and checks the event; never throws. */
function parseEvent(rawBody: Buffer): ParsedEvent {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(rawBody);
  } catch {
    return { kind: "unusable", reason: "the body is not UTF-8", value: undefined, text: rawBody.toString("utf8") };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "unusable", reason: "the body is not JSON", value: undefined, text };
  }
  const checked = bankEventSchema.safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    return { kind: "unusable", reason: `${issue?.path.join(".") || "event"}: ${issue?.message}`, value, text };
  }
  return { kind: "event", event: checked.data, text };
}

async function applyEvent(event: BankEvent, text: string): Promise<WebhookOutcome> {
  const record = (outcome: WebhookOutcome, db: Queryable = pool()) => recordEvent(db, event, text, outcome);
  const parts = parseMerchantRef(event.data.merchantRef);
  const entry = parts ? await findEntryByKey(operationKey(parts.userId, "topup", parts.refId)) : null;
  const refused = entry ? mismatchOf(event, entry) : "anomaly_unknown_merchant_ref";
  if (refused || !entry) {
    const outcome = refused ?? "anomaly_unknown_merchant_ref";
    await record(outcome);
    return outcome;
  }

  const ref = { userId: entry.userId, entryId: entry.id };
  const detail = `event ${event.id}`;
  // The move and the event's record commit together: the delivery that moved the row records what the event did,
  // and a concurrent copy of it waits on the row's lock, then finds the row terminal (case C19).
  return withTransaction(async (tx) => {
    let moved: TransitionOutcome;
    if (event.type === "charge.succeeded") {
      // Status-only guard: the bank is the source of truth, whoever holds the lease (contract section 2).
      moved = await completeEntry(
        ref,
        { actor: "webhook", guard: { kind: "status_only" }, credit: true, bankChargeId: event.data.chargeId, detail },
        tx,
      );
    } else {
      moved = await failEntry(
        ref,
        {
          actor: "webhook",
          guard: { kind: "status_only" },
          reason: "declined_by_bank",
          bankChargeId: event.data.chargeId,
          detail,
        },
        tx,
      );
    }
    const wanted = event.type === "charge.succeeded" ? "succeeded" : "failed";
    const outcome: WebhookOutcome =
      moved.kind === "moved" ? (wanted === "succeeded" ? "credited" : "failed") : terminalOutcome(moved.entry, wanted);
    await record(outcome, tx);
    return outcome;
  });
}

/** The anomaly an event's data makes against its row, or null when they agree. */
function mismatchOf(event: BankEvent, entry: LedgerEntry): WebhookOutcome | null {
  if (event.data.amount !== entry.amountMinor) return "anomaly_amount_mismatch";
  if (event.data.currency !== entry.currency) return "anomaly_currency_mismatch";
  if (entry.bankChargeId !== null && entry.bankChargeId !== event.data.chargeId) return "anomaly_charge_mismatch";
  return null;
}

function terminalOutcome(entry: LedgerEntry, wanted: "succeeded" | "failed"): WebhookOutcome {
  if (entry.status === wanted) return "duplicate";
  // A success for a row that already failed would mean money taken and not credited: an admin must look.
  if (wanted === "succeeded") return "anomaly_success_for_failed_row";
  // A failure after a success is a stale, reordered delivery: terminal rows do not move (contract section 5).
  return "ignored_terminal";
}

// First delivery of an event inserts its row; later ones count themselves. The outcome is replaced only by a
// delivery that applied the event ($10), so a duplicate recorded first never hides the credit (case C19).
const RECORD_EVENT_SQL = `
INSERT INTO bank_webhook_events
  (event_id, type, merchant_ref, charge_id, amount_minor, currency, outcome, payload, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (event_id) DO UPDATE
   SET deliveries = bank_webhook_events.deliveries + 1,
       last_seen_at = now(),
       outcome = CASE WHEN $10::boolean THEN EXCLUDED.outcome ELSE bank_webhook_events.outcome END,
       detail = CASE WHEN $10::boolean THEN EXCLUDED.detail ELSE bank_webhook_events.detail END`;

async function recordEvent(db: Queryable, event: BankEvent, payload: string, outcome: WebhookOutcome): Promise<void> {
  await db.query(RECORD_EVENT_SQL, [
    event.id,
    event.type,
    event.data.merchantRef,
    event.data.chargeId,
    event.data.amount,
    event.data.currency,
    outcome,
    payload,
    null,
    APPLIED_OUTCOMES.includes(outcome),
  ]);
}

/** Longest merchant reference or charge id kept from an unusable event (the columns are for reading, not joining). */
const UNUSABLE_FIELD_CHARS_MAX = 400;

/**
 * Text PostgreSQL stores as it is and an admin can read: every control character (NUL among them, which a text
 * column refuses, case C18) is written as a `\uXXXX` escape, and the result is cut to `maxChars`.
 */
export function storableText(text: string, maxChars: number = Number.POSITIVE_INFINITY): string {
  const escaped = text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
    /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return escaped.length > maxChars ? escaped.slice(0, maxChars) : escaped;
}

/** A field of an unusable event, when it is a string: kept (storable) so the admin sees what it was about. */
function fieldOf(value: unknown, ...path: string[]): string | null {
  let current: unknown = value;
  for (const key of path) {
    if (typeof current !== "object" || current === null) return null;
    current = (current as Record<string, unknown>)[key];
  }
  return typeof current === "string" ? storableText(current, UNUSABLE_FIELD_CHARS_MAX) : null;
}

/**
 * Records a signed event that cannot be read as an event (contract section 5: "recorded as unusable and shown to
 * admins"), under an id derived from its bytes (its own id may be what is unusable), so a redelivery of the same
 * bytes counts as a delivery of the same record. Answered 200: redelivering it would never make it usable.
 */
async function recordUnusableEvent(rawBody: Buffer, parsed: Extract<ParsedEvent, { kind: "unusable" }>): Promise<void> {
  const eventId = `unusable:${createHash("sha256").update(rawBody).digest("hex")}`;
  await pool().query(RECORD_EVENT_SQL, [
    eventId,
    "unusable",
    fieldOf(parsed.value, "data", "merchantRef"),
    fieldOf(parsed.value, "data", "chargeId"),
    null,
    null,
    "unusable_event",
    storableText(parsed.text),
    storableText(parsed.reason, UNUSABLE_FIELD_CHARS_MAX),
    false,
  ]);
}
