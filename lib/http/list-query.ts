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

/**
 * How far ahead of the server's clock `GET /api/v1/wallet?at=` may ask, in seconds: five minutes absorb a client's
 * clock running fast; further ahead is a question about postings not made yet, refused (contract section 13.4).
 */
export const AT_FUTURE_SKEW_S = 300;
/** The earliest instant asked about: the Unix epoch, long before any posting (older text is a mistake). */
const AT_EARLIEST_MS = 0;
/** Longest `at` text: `YYYY-MM-DDTHH:MM:SS.ffffff+HH:MM` is 32 characters. */
const AT_LENGTH_MAX = 32;

const atParam = z
  .string()
  .max(AT_LENGTH_MAX)
  .pipe(z.iso.datetime({ offset: true }))
  // PostgreSQL keeps microseconds and would round a seventh decimal (possibly up, past a posting made after it).
  .refine((text) => !/\.\d{7}/.test(text), "at most six decimals of a second")
  .refine((text) => {
    const ms = Date.parse(text);
    return ms >= AT_EARLIEST_MS && ms <= Date.now() + AT_FUTURE_SKEW_S * 1000;
  }, `must be from 1970 to at most ${AT_FUTURE_SKEW_S} seconds from now`)
  .meta({
    description:
      "An instant, ISO-8601 with `Z` or an offset (`2026-12-01T18:30:00Z`, up to six decimals of a second): the " +
      "balance and debt after every posting at or before it. Up to five minutes ahead of the server's clock answers " +
      "what is booked so far; further ahead, or before 1970, is 400 invalid_request.",
    example: "2026-12-01T18:30:00Z",
  });

/** `GET /api/v1/wallet`: `at`, the balance at an instant (contract section 13.4); without it, the balance now. */
export const walletQuerySchema = z.object({ at: atParam.optional() });

/**
 * Longest range of a statement, in UTC days (both ends included): a year and its leap day, the longest period a
 * statement is asked for (a tax year). It bounds what one CSV export reads to one user's year of postings.
 */
export const STATEMENT_DAYS_MAX = 366;

const DAY_MS = 86_400_000;

const statementRange = {
  from: dayParam.meta({ description: "The statement's first UTC day." }),
  to: dayParam.meta({
    description: `The statement's last UTC day (included); at most ${STATEMENT_DAYS_MAX} days in all.`,
  }),
};

function withRangeRules<S extends z.ZodObject<typeof statementRange>>(schema: S): S {
  return schema
    .refine((query) => query.from <= query.to, { message: "must not be before from", path: ["to"] })
    .refine((query) => (Date.parse(query.to) - Date.parse(query.from)) / DAY_MS < STATEMENT_DAYS_MAX, {
      message: `the range is at most ${STATEMENT_DAYS_MAX} days`,
      path: ["to"],
    });
}

/** `GET /api/v1/statement` (contract section 13.4): a range of UTC days, both included, and paging. */
export const statementQuerySchema = withRangeRules(
  z.object({ ...statementRange, limit: limitParam.optional(), cursor: cursorParam.optional() }),
);

/** `GET /api/v1/statement.csv` (contract section 13.4): a range of UTC days, both included; the file is every line. */
export const statementCsvQuerySchema = withRangeRules(z.object(statementRange));
