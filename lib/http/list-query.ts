/**
 * Query strings of list endpoints (contract section 4): `status` one of the row states, `limit` 1..100,
 * `stuck=1` for the admin list. Anything else in these parameters is 400 invalid_request.
 */
import { z } from "zod";
import type { Validated } from "./operation-requests";

const querySchema = z.object({
  status: z.enum(["initiated", "processing", "succeeded", "failed"]).optional(),
  limit: z
    .string()
    .regex(/^[1-9][0-9]{0,2}$/, "must be an integer from 1 to 100")
    .transform(Number)
    .refine((n) => n <= 100, "must be an integer from 1 to 100")
    .optional(),
  stuck: z.enum(["0", "1", "true", "false"]).optional(),
});

export type ListQuery = {
  status?: "initiated" | "processing" | "succeeded" | "failed";
  limit?: number;
  stuck?: boolean;
};

/** Parses `status`, `limit` and `stuck` from `params`; returns the values or a 400 detail. */
export function parseListQuery(params: URLSearchParams): Validated<ListQuery> {
  const parsed = querySchema.safeParse({
    status: params.get("status") ?? undefined,
    limit: params.get("limit") ?? undefined,
    stuck: params.get("stuck") ?? undefined,
  });
  if (!parsed.success) {
    return { ok: false, detail: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") };
  }
  const { status, limit, stuck } = parsed.data;
  return { ok: true, value: { status, limit, stuck: stuck === "1" || stuck === "true" } };
}
