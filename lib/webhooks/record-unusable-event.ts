import { createHash } from "node:crypto";
import type { ParsedBankEvent } from "./parse-bank-event";
import { recordWebhookEvent } from "./record-webhook-event";

/** Longest merchant reference or charge id kept from an unusable event (the columns are for reading, not joining). */
const UNUSABLE_FIELD_CHARS_MAX = 400;

/**
 * Records a signed body that cannot be read as an event (contract section 5: "recorded as unusable and shown to
 * admins"; case C18) as outcome `unusable_event`, under an id derived from its bytes (its own id may be what is
 * unusable), so a redelivery of the same bytes counts as a delivery of the same record. The record keeps the
 * merchant reference and charge id when they are strings, the body as text and `unusable.reason` as its detail, each
 * made storable first (a text column refuses NUL). The caller answers 200: redelivering it would never make it usable.
 * Throws database errors.
 */
export async function recordUnusableEvent(
  rawBody: Buffer,
  unusable: Extract<ParsedBankEvent, { kind: "unusable" }>,
): Promise<void> {
  const event = {
    id: `unusable:${createHash("sha256").update(rawBody).digest("hex")}`,
    type: "unusable",
    data: {
      merchantRef: fieldOf(unusable.value, "data", "merchantRef"),
      chargeId: fieldOf(unusable.value, "data", "chargeId"),
      amount: null,
      currency: null,
    },
  };
  const detail = storableText(unusable.reason, UNUSABLE_FIELD_CHARS_MAX);
  await recordWebhookEvent(null, event, storableText(unusable.text), "unusable_event", detail);
}

/**
 * Text PostgreSQL stores as it is and an admin can read: every control character (NUL among them, which a text
 * column refuses, case C18) is written as a `\uXXXX` escape, and the result is cut to `maxChars`.
 */
function storableText(text: string, maxChars: number = Number.POSITIVE_INFINITY): string {
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
