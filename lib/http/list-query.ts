/**
 * Query strings of the list endpoints (contract section 4): `status` one of the row states, `limit` 1..100
 * (default 50), `cursor` an opaque cursor from a previous page's `nextCursor`, `stuck=1` for the admin list.
 * Anything else in these parameters is 400 invalid_request. The schemas are the ones the OpenAPI document
 * describes (lib/openapi), so the description and the validation cannot differ.
 */
import { z } from "zod";
import { CURSOR_PATTERN, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from "../pagination/cursor";
import type { Validated } from "./operation-requests";
import { LEDGER_TYPES } from "../ledger";
import { READABLE_TEXT_PATTERN } from "../payments/payees";

const statusParam = z.enum(["initiated", "processing", "succeeded", "failed"]).meta({
  description: "Only rows in this state.",
});

/** 1..100 written as a plain decimal integer (no sign, no leading zero), matched exactly. */
const limitParam = z
  .string()
  .regex(/^(?:[1-9][0-9]?|100)$/, `must be an integer from 1 to ${LIST_LIMIT_MAX}`)
  .transform(Number)
  .meta({
    description: `Most items on the page: an integer from 1 to ${LIST_LIMIT_MAX}; ${LIST_LIMIT_DEFAULT} when absent.`,
    example: "50",
  });

const cursorParam = z
  .string()
  .regex(CURSOR_PATTERN, "must be a cursor from a previous page's nextCursor")
  .meta({
    description:
      "Opaque: the `nextCursor` of the previous page of the same list, for the same caller and filters. Absent for " +
      "the first page. A malformed or foreign cursor is 400 invalid_request.",
  });

const stuckParam = z
  .enum(["0", "1", "true", "false"])
  .transform((value) => value === "1" || value === "true")
  .meta({ description: "`1` (or `true`): only unfinished rows whose lease has expired." });

/** `GET /api/v1/topups`. */
export const topupsQuerySchema = z.object({
  status: statusParam.optional(),
  limit: limitParam.optional(),
  cursor: cursorParam.optional(),
});

/** Longest search text: a full reference is at most 128 characters (contract section 1); 128 bounds the scan. */
const SEARCH_LENGTH_MAX = 128;

const typeParam = z.enum(LEDGER_TYPES).meta({ description: "Only movements of this kind." });
const searchParam = z
  .string()
  .min(1)
  .max(SEARCH_LENGTH_MAX)
  .regex(READABLE_TEXT_PATTERN, "must be readable text: no control or invisible characters, no space at either end")
  .meta({
    description:
      `1..${SEARCH_LENGTH_MAX} characters: movements whose readable reference (\`PY-7K3Q-9D2M\`, any case, dashes ` +
      "optional) is this, or whose full reference, payee or note contains it (case-insensitive).",
  });
const dayParam = z.iso.date().meta({ description: "A UTC day, `YYYY-MM-DD`.", example: "2026-12-01" });

/** `GET /api/v1/entries`: paging, and the statement's filters (docs/decisions/055). */
export const entriesQuerySchema = z
  .object({
    type: typeParam.optional(),
    status: statusParam.optional(),
    q: searchParam.optional(),
    from: dayParam.optional().meta({ description: "Only movements created on this UTC day or later." }),
    to: dayParam.optional().meta({ description: "Only movements created on this UTC day or earlier." }),
    limit: limitParam.optional(),
    cursor: cursorParam.optional(),
  })
  .refine((query) => query.from === undefined || query.to === undefined || query.from <= query.to, {
    message: "must not be before from",
    path: ["to"],
  });

const userParam = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email().max(254))
  .meta({ description: "Only this user's rows: their email address (case does not matter)." });

/** `GET /api/v1/admin/topups` (and the admin page's filters). */
export const adminTopupsQuerySchema = z.object({
  status: statusParam.optional(),
  stuck: stuckParam.optional(),
  user: userParam.optional(),
  limit: limitParam.optional(),
  cursor: cursorParam.optional(),
});

/** `GET /api/v1/admin/books/{account}/postings`: paging only. */
export const accountPostingsQuerySchema = z.object({
  limit: limitParam.optional(),
  cursor: cursorParam.optional(),
});

/** The path of `GET /api/v1/admin/books/{account}/postings`: a house account's name (contract section 13.1). */
export const bookAccountPathSchema = z.object({
  account: z.string().meta({
    description: "A house account: `bank_clearing`, `refunds_in_flight`, `rewards_funded`, `merchants_payable`.",
  }),
});

/**
 * Parses the members of `schema` from `params` (the first value of each; others are ignored) and returns the
 * values, or a 400 detail naming each invalid parameter.
 */
export function parseQuery<S extends z.ZodObject>(schema: S, params: URLSearchParams): Validated<z.output<S>> {
  const raw: Record<string, string> = {};
  for (const name of Object.keys(schema.shape)) {
    const value = params.get(name);
    if (value !== null) raw[name] = value;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    return { ok: false, detail: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ") };
  }
  return { ok: true, value: parsed.data };
}
