import type { z } from "zod";
import { disputeEventSchema } from "../chargebacks/handle-dispute-event";
import { payoutEventSchema } from "../bank/payouts-client";
import { refundEventSchema } from "../refunds/handle-refund-event";
import { bankEventSchema, chargeEventSchema, type BankEvent } from "./bank-event-schema";

/** A verified body read as the one event union, or why it cannot be read as any of its kinds. */
export type ParsedBankEvent =
  /** `text`: the body as decoded, what the event's record stores. */
  | { readonly kind: "event"; readonly event: BankEvent; readonly text: string }
  /**
   * `reason`: why, in the terms of what the body says it is ({@link unusableReason}), not yet made storable;
   * `value`: the parsed JSON when the body was JSON, to keep the fields an admin recognises it by.
   */
  | { readonly kind: "unusable"; readonly reason: string; readonly value: unknown; readonly text: string };

/**
 * Reads a verified body as a bank event: strict UTF-8, JSON, then the union of charge, refund and dispute events
 * (lib/webhooks/bank-event-schema.ts), each field checked for shape and bounds before anything reads it (case C18).
 * `rawBody` is the body exactly as received. Returns the event, or `unusable` with the reason. Never throws.
 */
export function parseBankEvent(rawBody: Buffer): ParsedBankEvent {
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
  if (checked.success) return { kind: "event", event: checked.data, text };
  return { kind: "unusable", reason: unusableReason(value), value, text };
}

/**
 * The kinds of event the bank signs, told apart by the start of their `type`, each with the schema its handler reads
 * it with. Disputes come first: their types (`charge.disputed`, `charge.dispute_closed`) also start with `charge.`.
 */
const EVENT_KINDS: ReadonlyArray<{ readonly name: string; readonly prefix: string; readonly schema: z.ZodType }> = [
  { name: "dispute event", prefix: "charge.dispute", schema: disputeEventSchema },
  { name: "refund event", prefix: "refund.", schema: refundEventSchema },
  { name: "payout event", prefix: "payout.", schema: payoutEventSchema },
  { name: "charge event", prefix: "charge.", schema: chargeEventSchema },
];

/** Characters of an unusable event's own `type` quoted in its reason: enough to recognise it, never the whole reason. */
const QUOTED_TYPE_CHARS_MAX = 64;

/**
 * Why a JSON value that no event schema accepts cannot be applied, in the terms of what it says it is: a `refund.*`
 * event is judged by the refund events' schema and a `charge.dispute*` event by the disputes', not by the charge
 * events' (which would report a refund's missing `refundId` as a wrong `type`). Returns e.g.
 * `refund event "refund.succeeded": data.refundId: ...`, `an event of a type the wallet does not handle:
 * "charge.refunded"`, or `the body is not an object of named fields`.
 */
function unusableReason(value: unknown): string {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return "the body is not an object of named fields";
  const type: unknown = (value as Record<string, unknown>).type;
  if (typeof type !== "string") return "the event has no type (a string such as charge.succeeded)";
  const quoted = JSON.stringify(type.slice(0, QUOTED_TYPE_CHARS_MAX));
  const kind = EVENT_KINDS.find((k) => type.startsWith(k.prefix));
  if (!kind) return `an event of a type the wallet does not handle: ${quoted}`;
  const issue = kind.schema.safeParse(value).error?.issues[0];
  // The union holds every kind's schema, so the kind's own schema refuses the value too and names an issue. A wrong
  // `type` under a known prefix (`refund.reversed`) is a type nobody handles, not a malformed event of that kind.
  if (!issue || issue.path[0] === "type") return `an event of a type the wallet does not handle: ${quoted}`;
  return `${kind.name} ${quoted}: ${issue.path.join(".") || "event"}: ${issue.message}`;
}
