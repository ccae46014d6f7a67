/**
 * The webhook's door for dispute events (`charge.disputed`, `charge.dispute_closed`; contract section 12). An event
 * only says "dispute X changed": its outcome is a claim, so the app asks the bank for the dispute
 * (`GET /disputes/{id}`) and applies what the bank reports (lib/chargebacks/apply-dispute.ts). A stale event (the
 * dispute has moved on) or a forged one (signed with a leaked secret, naming an outcome the bank does not report)
 * moves nothing beyond what the bank says. The event is recorded in the same transaction as the entries it landed.
 */
import { z } from "zod";
import type { BankCallOptions } from "../bank/client";
import { getDispute } from "../bank/disputes";
import { withTransaction } from "../db";
import { type Queryable, withTransactionRetry } from "../ledger";
import { log } from "../log";
import { applyBankDispute, type DisputeApplication } from "./apply-dispute";

/** The dispute event types; any other type is not this door's. */
export const DISPUTE_EVENT_TYPES = ["charge.disputed", "charge.dispute_closed"] as const;

const printable = (max: number) => z.string().regex(new RegExp(`^[\\x21-\\x7e]{1,${max}}$`), "printable ASCII");

/** A dispute event as far as it is read: ids and bounds only (its outcome is never believed). */
export const disputeEventSchema = z
  .object({
    id: printable(200),
    type: z.enum(DISPUTE_EVENT_TYPES),
    data: z.object({
      chargeId: printable(200),
      merchantRef: printable(400),
      amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
      currency: z.string().regex(/^[A-Z]{3}$/, "ISO 4217 code"),
      disputeId: z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, "a dispute id usable as a ref id"),
    }),
  })
  .meta({
    id: "DisputeEvent",
    description:
      "A dispute opened or closed (contract section 12). `data` also carries the dispute's new `status` or `outcome`, " +
      "which the app never believes: it asks the bank (`GET /disputes/{id}`) before any money moves.",
  });
export type DisputeEvent = z.infer<typeof disputeEventSchema>;

/** What a dispute event did; recorded per event id and shown to admins. `anomaly_*` moved nothing. */
export type DisputeOutcome =
  /** This delivery landed the chargeback (and, for a reversed dispute, its reversal). */
  | "chargeback"
  /** This delivery landed the reversal; the chargeback was already there. */
  | "chargeback_reversed"
  /** The entries the bank's dispute asks for were already there. */
  | "duplicate"
  /** The bank reports a dispute that moves no money (open, or won outright), whatever the event said. */
  | "ignored_stale"
  | "anomaly_unknown_dispute"
  | "anomaly_dispute";

/** The outcomes that mean "this delivery applied the event" (the recorded outcome of its event). */
export const APPLIED_DISPUTE_OUTCOMES: readonly DisputeOutcome[] = ["chargeback", "chargeback_reversed"];

/** Records an event with its outcome on `db` (the webhook handler's recorder, passed in). */
export type RecordEvent = (
  db: Queryable | null,
  event: DisputeEvent,
  text: string,
  outcome: DisputeOutcome,
  detail: string | null,
) => Promise<void>;

export type DisputeEventResult =
  | { readonly kind: "received"; readonly outcome: DisputeOutcome }
  | { readonly kind: "bank_unavailable"; readonly about: "dispute"; readonly reason: string };

/**
 * Handles a verified (signed) delivery when it is a dispute event; returns null for any other body, which the
 * caller handles as before (an unusable dispute event falls through and is recorded as unusable there).
 *
 * Returns `received` with the outcome (answer 200), or `bank_unavailable` when the bank could not be asked (answer
 * 503: nothing moved, the bank redelivers). Throws database errors (answer 500).
 */
export async function handleDisputeEvent(
  rawBody: Buffer,
  deps: { readonly record: RecordEvent; readonly bank: BankCallOptions },
): Promise<DisputeEventResult | null> {
  const parsed = parseDisputeEvent(rawBody);
  if (!parsed) return null;
  const { event, text } = parsed;
  const looked = await getDispute(event.data.disputeId, deps.bank);
  if (looked.kind === "unknown" || looked.kind === "rejected") {
    const reason = looked.kind === "unknown" ? looked.reason : `${looked.status} ${looked.code}`;
    return { kind: "bank_unavailable", about: "dispute", reason: `dispute lookup: ${reason}` };
  }
  if (looked.kind === "not_found") {
    await deps.record(null, event, text, "anomaly_unknown_dispute", "the bank has no such dispute: nothing moved");
    log().warn({ eventId: event.id, data: event.data }, "dispute event anomaly: the bank has no such dispute");
    return { kind: "received", outcome: "anomaly_unknown_dispute" };
  }
  const dispute = looked.dispute;
  if (dispute.chargeId !== event.data.chargeId || dispute.merchantRef !== event.data.merchantRef) {
    const detail = `the bank's dispute ${dispute.id} is about charge ${dispute.chargeId}, not the event's`;
    await deps.record(null, event, text, "anomaly_dispute", detail);
    log().warn({ eventId: event.id, data: event.data }, "dispute event anomaly: another charge");
    return { kind: "received", outcome: "anomaly_dispute" };
  }
  const outcome = await withTransactionRetry(() =>
    withTransaction(async (tx) => {
      const applied = await applyBankDispute(dispute, {
        actor: "webhook",
        detail: `webhook: ${event.type} ${event.id}`,
        db: tx,
      });
      const result = outcomeOf(applied);
      await deps.record(tx, event, text, result.outcome, result.detail);
      return result.outcome;
    }),
  );
  if (outcome.startsWith("anomaly_"))
    log().warn({ eventId: event.id, outcome, data: event.data }, "dispute event anomaly");
  return { kind: "received", outcome };
}

function outcomeOf(applied: DisputeApplication): { outcome: DisputeOutcome; detail: string | null } {
  switch (applied.kind) {
    case "no_move":
      return { outcome: "ignored_stale", detail: `the bank reports: ${applied.detail}` };
    case "anomaly":
      return { outcome: "anomaly_dispute", detail: applied.detail };
    case "applied": {
      const landed = applied.entries.filter((e) => e.result === "landed").map((e) => e.type);
      if (landed.includes("chargeback")) return { outcome: "chargeback", detail: `landed: ${landed.join(", ")}` };
      if (landed.includes("chargeback_reversal")) return { outcome: "chargeback_reversed", detail: null };
      return { outcome: "duplicate", detail: null };
    }
  }
}

/** The event when the body is a well-formed dispute event, else null (decoded strictly; never throws). */
function parseDisputeEvent(rawBody: Buffer): { event: DisputeEvent; text: string } | null {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(rawBody);
    const checked = disputeEventSchema.safeParse(JSON.parse(text));
    return checked.success ? { event: checked.data, text } : null;
  } catch {
    return null;
  }
}
