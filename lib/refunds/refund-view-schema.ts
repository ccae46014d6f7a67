/** The refund's JSON form (contract section 11), the OpenAPI document's `Refund`; built by ./settle-refund.ts. */
import { z } from "zod";

export const refundViewSchema = z
  .strictObject({
    refundId: z.string(),
    topupRefId: z.string(),
    amount: z.int().meta({ description: "Minor units." }),
    currency: z.string(),
    status: z.enum(["initiated", "processing", "succeeded", "failed"]),
    failureReason: z
      .enum(["insufficient_funds", "refund_exceeds_topup", "topup_disputed", "debt_outstanding", "declined_by_bank"])
      .nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: "Refund" });

export const refundResponseSchema = z.strictObject({ refund: refundViewSchema }).meta({ id: "RefundResponse" });
