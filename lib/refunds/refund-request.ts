/**
 * `POST /api/v1/admin/topups/{userId}/{refId}/refunds` body `{ refundId, amount }` (contract section 11), validated
 * like every operation's body (contract sections 1 and 3): unknown members refused, the amount a plain JSON integer
 * token from 1 to MAX_AMOUNT_MINOR, the refund id a new operation's ref id taken exactly as sent (not `.` or `..`,
 * case C32). Runs before any database work.
 */
import { z } from "zod";
import { env } from "../env";
import { readJsonBody } from "../http/read-json-body";
import { newRefIdSchema, refIdSchema } from "../http/operation-requests";
import { parseAmountToken } from "../http/raw-json";
import type { InputOutcome } from "../http/route";

export const refundRequestSchema = z
  .strictObject({
    refundId: newRefIdSchema.meta({
      description:
        "The refund's own reference, chosen by the admin's client: one refund per refundId and user; `.` and `..` " +
        "are refused (docs/decisions/049).",
    }),
    amount: z
      .int()
      .min(1)
      .meta({ description: "Minor units, a plain JSON integer, at most MAX_AMOUNT_MINOR.", example: 500 }),
  })
  .meta({ id: "RefundRequest" });

/** The refund route's path parameters, as the OpenAPI document describes them. */
export const refundPathSchema = z.object({
  userId: z
    .string()
    .regex(/^[\x21-\x39\x3b-\x7e]{1,255}$/)
    .meta({ description: "The top-up's owner." }),
  refId: refIdSchema,
});

/** Reads and validates the body. Returns the input, or 415/413/400 with a detail. */
export async function readRefundInput(
  request: Request,
): Promise<InputOutcome<{ refundId: string; amountMinor: number }>> {
  const body = await readJsonBody(request, env().BODY_LIMIT_BYTES);
  if (!body.ok) return body;
  const parsed = refundRequestSchema.safeParse(body.value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, code: "invalid_request", detail: `${issue?.path.join(".") || "body"}: ${issue?.message}` };
  }
  const maxAmountMinor = env().MAX_AMOUNT_MINOR;
  const amountMinor = parseAmountToken(body.raw.get("amount"), maxAmountMinor);
  if (amountMinor === null)
    return {
      ok: false,
      code: "invalid_request",
      detail: `amount: must be a JSON integer from 1 to ${maxAmountMinor} (minor units)`,
    };
  return { ok: true, value: { refundId: parsed.data.refundId, amountMinor } };
}
