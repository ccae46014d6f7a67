/**
 * Applies one bank webhook delivery (contract section 5). The signature is checked over the raw bytes first; after
 * that a delivery is answered 200 whatever it held, because a non-2xx only makes the bank retry, and an event that
 * cannot be applied will not become applicable by retrying. The one exception is a failure the app must confirm
 * with the bank and cannot, because the bank does not answer: 503, the row unchanged, and the bank redelivers.
 *
 * An event's fields, type and arrival order are claims:
 * - each field is checked for shape and bounds before it is read; an unusable event is recorded as such and never
 *   reaches a query that PostgreSQL could refuse (case C18);
 * - a signed `charge.succeeded` settles its row (the success path trusts the signature); a `charge.failed` fails
 *   nothing on its own word: the app asks the bank for the charge (`GET /charges?merchantRef=`) and settles the row
 *   from the bank's answer, so a stale failure that overtook the success credits instead (case C14); when the bank
 *   has no charge, the key is made unusable there first, as the reconciler does, and only then the row fails;
 * - a `charge.succeeded` for a row that has already failed is credited by the row's `adjustment` entry, once, and
 *   only when the bank confirms the charge succeeded (an adjustment is money moved on the bank's word, not an event's);
 * - the outcome recorded for an event is the one of the delivery that applied it, written in the same transaction
 *   as the row's move (case C19).
 * - a dispute event (`charge.disputed`, `charge.dispute_closed`) goes to lib/chargebacks/handle-dispute-event.ts
 *   first: the dispute is asked from the bank and applied as the bank reports it (contract section 12).
 * Rows are settled by lib/topups/settle-topup.ts, the one settlement function of the request, the webhook and the
 * reconciler. Events are deduplicated by the row's state, not by a cache (case C04).
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { cancelCharge, getCharge, type BankCallOptions } from "../bank/client";
import { parseMerchantRef } from "../bank/merchant-ref";
import { verifyWebhookSignature, type SignatureFailureReason } from "../bank/signature";
import {
  APPLIED_DISPUTE_OUTCOMES,
  disputeEventSchema,
  handleDisputeEvent,
  type DisputeOutcome,
} from "../chargebacks/handle-dispute-event";
import { pool, withTransaction } from "../db";
import { env } from "../env";
import { findEntryByKey, isTerminal, operationKey, prepared, type LedgerEntry, type Queryable } from "../ledger";
import { log } from "../log";
import {
  APPLIED_REFUND_OUTCOMES,
  handleRefundEvent,
  parseRefundEvent,
  refundEventSchema,
  type RefundWebhookOutcome,
} from "../refunds/handle-refund-event";
import {
  noteSettleFailure,
  settleTopup,
  type ChargeEvidence,
  type SettlementAnomalyKind,
  type SettlementOutcome,
} from "../topups/settle-topup";

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
  .meta({ id: "ChargeEvent", description: "A charge settled (contract section 5)." });

/**
 * Every event the bank signs and sends to the webhook, for the OpenAPI document: charge events (contract section 5),
 * refund events (section 11) and dispute events (section 12). Each kind is parsed by its own handler.
 */
export const bankWebhookEventSchema = z
  .union([bankEventSchema, refundEventSchema, disputeEventSchema])
  .meta({ id: "BankEvent" });

type BankEvent = z.infer<typeof bankEventSchema>;

/** What the app did with an event; recorded per event id and shown to admins. `anomaly_*` credits nothing. */
export type WebhookOutcome =
  /** This delivery credited the row (a success, or a failure the bank contradicted: case C14). */
  | "credited"
  /** This delivery failed the row, on the bank's confirmation. */
  | "failed"
  /** The row had already failed: this delivery credited the charge through the row's adjustment entry. */
  | "adjusted"
  /** The row already is what the event says. */
  | "duplicate"
  /** A failure event for a row that succeeded, or whose charge the bank still has pending: changes nothing. */
  | "ignored_stale"
  | "unusable_event"
  | "anomaly_unknown_merchant_ref"
  | `anomaly_${SettlementAnomalyKind}`
  /** Refund events (contract section 11; lib/refunds/handle-refund-event.ts). */
  | RefundWebhookOutcome
  /** Dispute events (lib/chargebacks/handle-dispute-event.ts, contract section 12). */
  | DisputeOutcome;

/** Outcomes that mean "this delivery applied the event": the recorded outcome of its event, whoever came first. */
const APPLIED_OUTCOMES: readonly WebhookOutcome[] = [
  "credited",
  "failed",
  "adjusted",
  ...APPLIED_DISPUTE_OUTCOMES,
  ...APPLIED_REFUND_OUTCOMES,
];

export type WebhookResult =
  | { readonly kind: "invalid_signature"; readonly reason: SignatureFailureReason }
  | { readonly kind: "received"; readonly outcome: WebhookOutcome }
  /**
   * The bank could not be asked: a charge's or a refund's failure could not be confirmed, or a dispute could not be
   * looked up (`about`). Answer 503; nothing changed (contract sections 5, 11 and 12).
   */
  | { readonly kind: "bank_unavailable"; readonly about: BankUnavailableAbout; readonly reason: string };

/** What the app wanted to ask the bank about when it could not: the 503's sentence says which. */
export type BankUnavailableAbout = "charge_failure" | "refund_failure" | "dispute";

/**
 * Budget of the bank call that confirms a failure, in ms: 2 s. The sandbox gives each delivery 5 s
 * (BANK_WEBHOOK_TIMEOUT_MS) and a lookup answers in milliseconds; past 2 s the app answers 503 in time for the
 * bank to record it and redeliver, instead of being cut off mid-answer.
 */
const CONFIRM_TIMEOUT_MS = 2000;

/**
 * Verifies and applies a delivery. `rawBody` is the request body exactly as received (already bounded by
 * WEBHOOK_BODY_LIMIT_BYTES); `signatureHeader` the `Bank-Signature` header (null when absent); `nowSeconds` the
 * verifier's clock in unix seconds.
 * Returns `invalid_signature` (answer 400, nothing changed), `bank_unavailable` (answer 503, nothing changed) or
 * `received` with the outcome (answer 200). Throws on database failures (answer 500, so the bank redelivers later),
 * after counting a failed settlement on the row.
 */
export async function handleBankWebhook(
  rawBody: Buffer,
  signatureHeader: string | null,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): Promise<WebhookResult> {
  const settings = env();
  const verified = verifyWebhookSignature({
    rawBody,
    header: signatureHeader,
    secrets: settings.webhookSecrets,
    nowSeconds,
  });
  if (!verified.ok) return { kind: "invalid_signature", reason: verified.reason };
  // Charge events first: the bank sends one per top-up, and the event types of the three handlers are disjoint, so a
  // body that is a valid charge event is neither a dispute nor a refund event.
  const parsed = parseEvent(rawBody);
  if (parsed.kind === "event") return await handleChargeEvent(parsed.event, parsed.text, settings.BANK_URL);
  const dispute = await handleDisputeEvent(rawBody, {
    record: (db, event, text, outcome, detail) => recordEvent(db ?? pool(), event, text, outcome, detail),
    bank: { bankUrl: settings.BANK_URL, timeoutMs: CONFIRM_TIMEOUT_MS },
  });
  if (dispute) return dispute;
  // Refund events have their own handler (contract section 11).
  const refundEvent = parseRefundEvent(rawBody.toString("utf8"));
  if (refundEvent)
    return handleRefundEvent(refundEvent, rawBody.toString("utf8"), {
      record: (db, event, text, outcome, detail) => recordEvent(db ?? pool(), event, text, outcome, detail),
      bank: { bankUrl: settings.BANK_URL, timeoutMs: CONFIRM_TIMEOUT_MS },
    });
  const reason = unusableReason(parsed);
  await recordUnusableEvent(rawBody, parsed, reason);
  log().warn({ reason }, "bank webhook: unusable signed event recorded");
  return { kind: "received", outcome: "unusable_event" };
}

/** A verified charge event (`charge.succeeded`, `charge.failed`): see {@link handleBankWebhook}. */
async function handleChargeEvent(event: BankEvent, text: string, bankUrl: string): Promise<WebhookResult> {
  const parts = parseMerchantRef(event.data.merchantRef);
  // The common case, a success for an unfinished top-up that it matches, in one statement; anything else (or a
  // database error, which the long way meets again and counts on the row) is judged the long way below.
  if (parts && event.type === "charge.succeeded" && (await creditedInOneStatement(event, text, parts))) {
    return { kind: "received", outcome: "credited" };
  }
  const entry = parts ? await findEntryByKey(operationKey(parts.userId, "topup", parts.refId)) : null;
  if (!entry) {
    await recordEvent(pool(), event, text, "anomaly_unknown_merchant_ref", "no top-up has this merchant reference");
    log().warn({ eventId: event.id, data: event.data }, "bank webhook anomaly: unknown merchant reference");
    return { kind: "received", outcome: "anomaly_unknown_merchant_ref" };
  }

  const evidence = await evidenceFor(event, entry, { bankUrl, timeoutMs: CONFIRM_TIMEOUT_MS });
  if (evidence.kind === "bank_unavailable") return { ...evidence, about: "charge_failure" };
  if (evidence.kind === "no_move") {
    await recordEvent(pool(), event, text, evidence.outcome, evidence.detail);
    return { kind: "received", outcome: evidence.outcome };
  }
  const outcome = await settleAndRecord(event, text, entry, evidence.evidence);
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
    return {
      kind: "unusable",
      reason: "the body is not valid UTF-8 text",
      value: undefined,
      text: rawBody.toString("utf8"),
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "unusable", reason: "the body is not a well-formed event", value: undefined, text };
  }
  const checked = bankEventSchema.safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    return { kind: "unusable", reason: `${issue?.path.join(".") || "event"}: ${issue?.message}`, value, text };
  }
  return { kind: "event", event: checked.data, text };
}

type EventEvidence =
  | { kind: "evidence"; evidence: ChargeEvidence }
  /** Nothing to move and nothing to ask: the row already settled the question. */
  | { kind: "no_move"; outcome: WebhookOutcome; detail: string }
  | { kind: "bank_unavailable"; reason: string };

/**
 * Turns an event into evidence the settlement accepts. A success is its own evidence (signed). A failure is a
 * question for the bank, asked only while the row is unfinished: a terminal row is never moved by a failure, so
 * asking would change nothing.
 */
async function evidenceFor(event: BankEvent, entry: LedgerEntry, bank: BankCallOptions): Promise<EventEvidence> {
  const { data } = event;
  if (event.type === "charge.succeeded" && entry.status === "failed") return await adjustmentEvidence(data, bank);
  if (event.type === "charge.succeeded") {
    return {
      kind: "evidence",
      evidence: {
        source: "signed_success",
        chargeId: data.chargeId,
        amountMinor: data.amount,
        currency: data.currency,
      },
    };
  }
  if (isTerminal(entry.status)) {
    return entry.status === "failed"
      ? { kind: "no_move", outcome: "duplicate", detail: "the row has already failed" }
      : {
          kind: "no_move",
          outcome: "ignored_stale",
          detail: "a failure for a row that succeeded: terminal rows do not move",
        };
  }
  const looked = await getCharge(data.merchantRef, bank);
  switch (looked.kind) {
    case "found":
      return { kind: "evidence", evidence: { source: "bank", charge: looked.charge } };
    case "not_found": {
      // No charge: make the key unusable first (a request still in flight can then never charge it), as the
      // reconciler does, and fail the row only on the bank's confirmation (contract section 5).
      const cancelled = await cancelCharge(data.merchantRef, bank);
      if (cancelled.kind === "cancelled") return { kind: "evidence", evidence: { source: "key_cancelled" } };
      if (cancelled.kind === "charge_exists")
        return { kind: "evidence", evidence: { source: "bank", charge: cancelled.charge } };
      return { kind: "bank_unavailable", reason: describeBankFailure(cancelled) };
    }
    default:
      return { kind: "bank_unavailable", reason: describeBankFailure(looked) };
  }
}

/**
 * A success for a row that has already failed would be credited by an adjustment, and an adjustment credits money
 * only on the bank's own answer (contract section 5): the bank is asked for the charge first. Its `succeeded`
 * settles the row through the adjustment; anything else credits nothing and is recorded as an anomaly.
 */
async function adjustmentEvidence(data: BankEvent["data"], bank: BankCallOptions): Promise<EventEvidence> {
  const looked = await getCharge(data.merchantRef, bank);
  if (looked.kind === "found" && looked.charge.status === "succeeded")
    return { kind: "evidence", evidence: { source: "bank", charge: looked.charge } };
  if (looked.kind === "found" || looked.kind === "not_found")
    return {
      kind: "no_move",
      outcome: "anomaly_success_for_failed_row",
      detail: `a success for a failed top-up, but the bank ${looked.kind === "found" ? `reports the charge ${looked.charge.status}` : "has no charge for it"}: nothing credited`,
    };
  return { kind: "bank_unavailable", reason: describeBankFailure(looked) };
}

function describeBankFailure(
  result: { kind: "unknown"; reason: string; detail?: string } | { kind: "rejected"; status: number; code: string },
): string {
  return result.kind === "unknown"
    ? `${result.reason}${result.detail ? `: ${result.detail}` : ""}`
    : `${result.status} ${result.code}`;
}

/** The outcome an event records for a settlement's outcome. */
function webhookOutcome(event: BankEvent, settled: SettlementOutcome): WebhookOutcome {
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

function outcomeDetail(event: BankEvent, settled: SettlementOutcome): string | null {
  if (settled.kind === "anomaly") return settled.anomaly.detail;
  if (settled.kind === "adjusted")
    return `the top-up had failed: credited by adjustment entry ${settled.adjustment.id}, linked to it`;
  if (event.type !== "charge.failed") return null;
  if (settled.kind === "credited") return "charge.failed not confirmed: the bank reports the charge succeeded";
  if (settled.kind === "pending") return "charge.failed not confirmed: the bank reports the charge pending";
  if (settled.kind === "failed" && settled.entry.failureReason === "expired")
    return "the bank had no charge for this key; the key was cancelled there first";
  return null;
}

/**
 * Settles the row and records the event in one transaction: the delivery that moves the row records what the event
 * did, and a concurrent copy of it waits on the row's lock, then finds the row settled (case C19). A database
 * failure rolls both back, is counted on the row after the rollback, and is rethrown (500: the bank redelivers).
 */
async function settleAndRecord(
  event: BankEvent,
  text: string,
  entry: LedgerEntry,
  evidence: ChargeEvidence,
): Promise<WebhookOutcome> {
  try {
    return await withTransaction(async (tx) => {
      const settled = await settleTopup(entry, evidence, {
        actor: "webhook",
        // Status-only guard: the bank is the source of truth, whoever holds the lease (contract section 2).
        guard: { kind: "status_only" },
        detail: `webhook: ${event.type} ${event.id}`,
        db: tx,
      });
      const outcome = webhookOutcome(event, settled);
      await recordEvent(tx, event, text, outcome, outcomeDetail(event, settled));
      return outcome;
    });
  } catch (error) {
    await noteSettleFailure(entry, error);
    throw error;
  }
}

/**
 * Credits a signed success in one statement (lib/ledger `creditMatchingTopup`): the row moves exactly as settleTopup
 * moves an unfinished row that matches a signed success, and the event is recorded as `credited` in the same commit
 * (case C19). Returns false when nothing was written (no unfinished row that the charge
 * matches) and also when the statement failed: the long way then meets the same error and counts it on the row.
 */
async function creditedInOneStatement(
  event: BankEvent,
  text: string,
  key: { readonly userId: string; readonly refId: string },
): Promise<boolean> {
  try {
    const result = await pool().query(
      prepared("webhook_credit_topup", CREDIT_TOPUP_SQL, [
        key.userId,
        key.refId,
        event.id,
        event.type,
        event.data.merchantRef,
        event.data.chargeId,
        event.data.amount,
        event.data.currency,
        text,
      ]),
    );
    return result.rows.length > 0;
  } catch (error) {
    log().warn({ err: error, eventId: event.id }, "bank webhook: one-statement credit failed; settling the long way");
    return false;
  }
}

// One call: webhook_credit_topup credits the matching unfinished top-up and records the event as `credited` in the
// same commit (prisma/functions/webhook_credit_topup.sql), arguments by name. No row: nothing was written.
const CREDIT_TOPUP_SQL = `SELECT (c.entry).id
  FROM webhook_credit_topup(
         p_user_id => $1, p_ref_id => $2, p_event_id => $3, p_type => $4, p_merchant_ref => $5, p_charge_id => $6,
         p_amount_minor => $7::bigint, p_currency => $8, p_payload => $9) AS c`;

// One call of webhook_record_event (prisma/functions/webhook_record_event.sql): the first delivery of an event inserts
// its row, later ones count themselves, and only a delivery that applied the event replaces its outcome (case C19).
const RECORD_EVENT_SQL = `SELECT webhook_record_event(
  p_event_id => $1, p_type => $2, p_merchant_ref => $3, p_charge_id => $4, p_amount_minor => $5::bigint,
  p_currency => $6, p_outcome => $7, p_payload => $8, p_detail => $9, p_applied => $10::boolean)`;

type RecordedEvent = Pick<BankEvent, "id" | "data"> & { readonly type: string };

/** RECORD_EVENT_SQL's values, in its arguments' order. */
function recordValues(event: RecordedEvent, payload: string, outcome: WebhookOutcome, detail: string | null) {
  return [
    event.id,
    event.type,
    event.data.merchantRef,
    event.data.chargeId,
    event.data.amount,
    event.data.currency,
    outcome,
    payload,
    detail,
    APPLIED_OUTCOMES.includes(outcome),
  ];
}

async function recordEvent(
  db: Queryable,
  event: RecordedEvent,
  payload: string,
  outcome: WebhookOutcome,
  detail: string | null,
): Promise<void> {
  // Named: every delivery sends it, so each connection plans it once (lib/ledger queryable.ts `prepared`).
  await db.query(prepared("webhook_record_event", RECORD_EVENT_SQL, recordValues(event, payload, outcome, detail)));
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
 * The kinds of event the bank signs, told apart by the start of their `type`, each with the schema its handler reads
 * it with. Disputes come first: their types (`charge.disputed`, `charge.dispute_closed`) also start with `charge.`.
 */
const EVENT_KINDS: ReadonlyArray<{ readonly name: string; readonly prefix: string; readonly schema: z.ZodType }> = [
  { name: "dispute event", prefix: "charge.dispute", schema: disputeEventSchema },
  { name: "refund event", prefix: "refund.", schema: refundEventSchema },
  { name: "charge event", prefix: "charge.", schema: bankEventSchema },
];

/** Characters of an unusable event's own `type` quoted in its reason: enough to recognise it, never the whole reason. */
const QUOTED_TYPE_CHARS_MAX = 64;

/**
 * Why a signed event cannot be applied, in the terms of what it says it is: a `refund.*` event is judged by the refund
 * events' schema and a `charge.dispute*` event by the disputes', not by the charge events' (which would report a
 * refund's missing `refundId` as a wrong `type`). Returns e.g. `refund event "refund.succeeded": data.refundId: ...`,
 * `an event of a type the wallet does not handle: "charge.refunded"`, or the decoding failure for bytes that are not
 * a JSON object. The caller makes it storable (control characters escaped, cut to length). Never throws.
 */
function unusableReason(parsed: Extract<ParsedEvent, { kind: "unusable" }>): string {
  const { value } = parsed;
  if (value === undefined) return parsed.reason;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "the body is not a JSON object";
  const type: unknown = (value as Record<string, unknown>).type;
  if (typeof type !== "string") return "the event has no type (a string such as charge.succeeded)";
  const quoted = JSON.stringify(type.slice(0, QUOTED_TYPE_CHARS_MAX));
  const kind = EVENT_KINDS.find((k) => type.startsWith(k.prefix));
  if (!kind) return `an event of a type the wallet does not handle: ${quoted}`;
  const checked = kind.schema.safeParse(value);
  const issue = checked.success ? undefined : checked.error.issues[0];
  if (!issue) return `${kind.name} ${quoted}: ${parsed.reason}`;
  if (issue.path[0] === "type") return `an event of a type the wallet does not handle: ${quoted}`;
  return `${kind.name} ${quoted}: ${issue.path.join(".") || "event"}: ${issue.message}`;
}

/**
 * Records a signed event that cannot be read as an event (contract section 5: "recorded as unusable and shown to
 * admins"), under an id derived from its bytes (its own id may be what is unusable), so a redelivery of the same
 * bytes counts as a delivery of the same record, with `reason` ({@link unusableReason}) as its detail. Answered 200:
 * redelivering it would never make it usable.
 */
async function recordUnusableEvent(
  rawBody: Buffer,
  parsed: Extract<ParsedEvent, { kind: "unusable" }>,
  reason: string,
): Promise<void> {
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
    storableText(reason, UNUSABLE_FIELD_CHARS_MAX),
    false,
  ]);
}
