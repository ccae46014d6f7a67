/**
 * `POST /api/v1/admin/transfers/{userId}/{refId}/reversal` body `{ reason }` (contract section 15;
 * docs/decisions/063), its path and its 201 body, as zod schemas: the route and the admin page's form validate with
 * them, and the OpenAPI document describes the route from them. Validation runs before any database work.
 */
import { z } from "zod";
import { env } from "../env";
import { readJsonBody } from "../http/read-json-body";
import { refIdSchema } from "../http/operation-requests";
import type { InputOutcome } from "../http/route";
import { READABLE_TEXT_PATTERN } from "../payments/payees";

/**
 * An admin's reason for a reversal: a sentence or two that the audit trail, the admin page and whoever later asks why
 * the money moved can read; 500 characters holds that and keeps the stored rows small (the note of a transfer is 140).
 */
export const REVERSAL_REASON_LENGTH_MAX = 500;

export const reversalRequestSchema = z
  .strictObject({
    reason: z
      .string()
      .min(1)
      .max(REVERSAL_REASON_LENGTH_MAX)
      .regex(
        READABLE_TEXT_PATTERN,
        "must be readable text: no control or invisible characters, no space at either end (taken exactly as sent)",
      )
      .meta({
        description:
          `Why the transfer is taken back (1..${REVERSAL_REASON_LENGTH_MAX} characters of readable text, taken ` +
          "exactly as sent). The reversal's parameters: the same transfer reversed again with another reason is " +
          "refused with 422 idempotency_key_reused.",
        example: "Sent to the wrong person; confirmed with both users.",
      }),
  })
  .meta({ id: "TransferReversalRequest" });

/** The reversal route's path parameters, as the OpenAPI document describes them. */
export const reversalPathSchema = z.object({
  userId: z
    .string()
    .regex(/^[\x21-\x39\x3b-\x7e]{1,255}$/)
    .meta({ description: "The transfer's sender." }),
  refId: refIdSchema,
});

/** The reversal as its 201 answers it, stored and replayed byte for byte. */
export const reversalViewSchema = z
  .strictObject({
    transferRefId: z.string().meta({ description: "The reversed transfer's refId (the sender's)." }),
    to: z.string().meta({ description: "The transfer's recipient, as the sender wrote the address." }),
    amount: z.int().meta({ description: "Minor units: the whole transfer, back to the sender." }),
    currency: z.string(),
    reason: z.string(),
    status: z.literal("succeeded"),
    createdAt: z.string().meta({ description: "ISO-8601, UTC, milliseconds." }),
  })
  .meta({ id: "TransferReversal" });

export const reversalResponseSchema = z
  .strictObject({ reversal: reversalViewSchema })
  .meta({ id: "TransferReversalResponse" });

/** Reads and validates the body. Returns `{ reason }`, or 415/413/400 with a detail. */
export async function readReversalInput(request: Request): Promise<InputOutcome<{ reason: string }>> {
  const body = await readJsonBody(request, env().BODY_LIMIT_BYTES);
  if (!body.ok) return body;
  const parsed = reversalRequestSchema.safeParse(body.value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, code: "invalid_request", detail: `${issue?.path.join(".") || "body"}: ${issue?.message}` };
  }
  return { ok: true, value: { reason: parsed.data.reason } };
}
