/**
 * The app's client for the bank's HTTP protocol (contract section 5; docs/bank-sandbox.md). It speaks to the
 * sandbox bank or to any provider with the same protocol, chosen by `bankUrl`.
 *
 * Outcomes are values, never exceptions (docs style: "expected outcomes are values"):
 * - `charge` / `found` / `page` / `cancelled` / `charge_exists`: the bank answered and we understood it;
 * - `rejected`: the bank answered 4xx, so it did not act on this request (e.g. 409 cancelled key, 422 key reused);
 * - `unknown`: we cannot know whether the bank acted (timeout, dropped connection, 5xx, unreadable answer).
 *   The caller must not guess: a charge may exist. It keeps the row `processing` and lets a later
 *   `getCharge`, a webhook or the reconciler find out.
 * Only programming errors throw (an invalid URL, a non-positive timeout).
 */
import { request } from "undici";
import { z } from "zod";

/** How to reach the bank, spelled out at every call site (docs style: "explicitly pass options"). */
export interface BankCallOptions {
  /** Base URL of the bank, e.g. `http://127.0.0.1:3001` (contract section 4: `BANK_URL`). */
  bankUrl: string;
  /** Whole-call budget in milliseconds (connect, send, wait, read), e.g. env `BANK_TIMEOUT_MS`. */
  timeoutMs: number;
}

export type ChargeStatus = "pending" | "succeeded" | "declined";

/** A charge as the bank reports it (contract section 5). `amount` is in minor units. */
export interface BankCharge {
  id: string;
  status: ChargeStatus;
  merchantRef: string;
  amount: number;
  currency: string;
  /** ISO-8601 UTC. */
  createdAt: string;
}

export type UnknownReason = "timeout" | "network" | "bad_response" | "server_error";

/** The request may or may not have been acted on. `detail` is for logs only (an errno, an HTTP status). */
export type UnknownOutcome = { kind: "unknown"; reason: UnknownReason; detail?: string };

/** The bank refused the request without acting on it: HTTP `status` (4xx) and the bank's error `code`. */
export type RejectedOutcome = { kind: "rejected"; status: number; code: string };

export type ChargeResult = { kind: "charge"; charge: BankCharge; replayed: boolean } | UnknownOutcome | RejectedOutcome;
export type GetChargeResult =
  | { kind: "found"; charge: BankCharge }
  | { kind: "not_found" }
  | UnknownOutcome
  | RejectedOutcome;
export type ListChargesResult =
  | { kind: "page"; charges: BankCharge[]; hasMore: boolean }
  | UnknownOutcome
  | RejectedOutcome;
export type CancelChargeResult =
  | { kind: "cancelled" }
  | { kind: "charge_exists"; charge: BankCharge }
  | UnknownOutcome
  | RejectedOutcome;

export interface CreateChargeInput {
  merchantRef: string;
  /** Positive integer, minor units (contract section 1). */
  amountMinor: number;
  /** ISO 4217 alphabetic code, e.g. `USD`. */
  currency: string;
}

const chargeSchema = z.object({
  id: z.string().min(1),
  status: z.enum(["pending", "succeeded", "declined"]),
  merchantRef: z.string().min(1),
  amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  currency: z.string().regex(/^[A-Z]{3}$/),
  createdAt: z.string().min(1),
});
const pageSchema = z.object({ charges: z.array(chargeSchema), hasMore: z.boolean() });
const cancelSchema = z.object({ cancelled: z.boolean(), charge: chargeSchema.nullable() });
const errorSchema = z.object({ error: z.object({ code: z.string().min(1) }) });

/**
 * Answers are small (a charge is ~200 bytes, a page of 1000 is ~250 KB). A body over 4 MiB (16x the largest
 * legitimate page) is not this protocol: it is refused as `bad_response` as soon as its declared length or the
 * bytes read so far pass the bound, and the rest is never read. The read itself is bounded in time by `timeoutMs`.
 */
const MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

export type RawResponse = { kind: "response"; status: number; json: unknown } | UnknownOutcome;

function assertOptions(options: BankCallOptions): void {
  if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) {
    throw new RangeError("bank client: timeoutMs must be a positive number of milliseconds");
  }
  new URL(options.bankUrl); // throws TypeError on a malformed bank URL: a configuration bug
}

function endpoint(options: BankCallOptions, path: string): string {
  return new URL(path, options.bankUrl.endsWith("/") ? options.bankUrl : `${options.bankUrl}/`).toString();
}

function errnoOf(error: unknown): string | undefined {
  // undici's errors carry a code ("UND_ERR_SOCKET", "ECONNREFUSED", ...), sometimes on a wrapped cause.
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current && typeof current === "object"; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function classifyThrown(error: unknown): UnknownOutcome {
  const name = (error as { name?: unknown } | null)?.name;
  if (name === "TimeoutError" || name === "AbortError") return { kind: "unknown", reason: "timeout" };
  const code = errnoOf(error);
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "ETIMEDOUT") {
    return { kind: "unknown", reason: "timeout", detail: code };
  }
  return { kind: "unknown", reason: "network", detail: code ?? (error instanceof Error ? error.message : "unknown") };
}

/**
 * One bank call: the raw status and parsed JSON, or why there was no answer (shared by lib/bank/disputes.ts).
 * Sent with undici's `request()` on its global keep-alive agent (Node's `fetch` is built on the same client, with a
 * WHATWG streams layer on top that cost ~4x the CPU per call: docs/benchmarks.md). Redirects are not followed: a 3xx
 * comes back as a status, which {@link classifyStatus} treats as a protocol violation.
 */
export async function call(
  options: BankCallOptions,
  method: "GET" | "POST",
  path: string,
  init: { idempotencyKey?: string; body?: unknown } = {},
): Promise<RawResponse> {
  assertOptions(options);
  const headers: Record<string, string> = { accept: "application/json" };
  if (init.idempotencyKey !== undefined) headers["idempotency-key"] = init.idempotencyKey;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  try {
    // One signal covers the whole exchange, including reading the body.
    const response = await request(endpoint(options, path), {
      method,
      headers,
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    const text = await boundedText(response.body, response.headers["content-length"]);
    if (text === null) return { kind: "unknown", reason: "bad_response", detail: "response too large" };
    let json: unknown;
    if (text.length > 0) {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
    }
    return { kind: "response", status: response.statusCode, json };
  } catch (error) {
    return classifyThrown(error);
  }
}

/**
 * Reads a response body as UTF-8 text, at most {@link MAX_RESPONSE_BYTES}: null (and the body destroyed, unread)
 * when its declared length or the bytes read pass the bound. Throws what reading throws (an abort, a reset).
 */
async function boundedText(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  contentLength: string | string[] | undefined,
): Promise<string | null> {
  if (typeof contentLength === "string" && Number(contentLength) > MAX_RESPONSE_BYTES) {
    body.destroy();
    return null;
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.length;
    if (bytes > MAX_RESPONSE_BYTES) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, bytes).toString("utf8");
}

/**
 * Maps a non-2xx answer: 5xx and 408 mean the bank may have acted (unknown); other 4xx mean it refused.
 * Returns null for 2xx so the caller parses the success body.
 */
export function classifyStatus(raw: { status: number; json: unknown }): UnknownOutcome | RejectedOutcome | null {
  if (raw.status >= 200 && raw.status < 300) return null;
  if (raw.status >= 500 || raw.status === 408) {
    return { kind: "unknown", reason: raw.status === 408 ? "timeout" : "server_error", detail: `HTTP ${raw.status}` };
  }
  if (raw.status >= 400) {
    const parsed = errorSchema.safeParse(raw.json);
    return {
      kind: "rejected",
      status: raw.status,
      code: parsed.success ? parsed.data.error.code : `http_${raw.status}`,
    };
  }
  // 1xx/3xx: redirects are not followed, so this is a protocol violation.
  return { kind: "unknown", reason: "bad_response", detail: `HTTP ${raw.status}` };
}

export function badResponse(detail: string): UnknownOutcome {
  return { kind: "unknown", reason: "bad_response", detail };
}

/**
 * Asks the bank to charge a top-up: `POST /charges` with `Idempotency-Key: <merchantRef>` (contract section 5).
 * Safe to repeat: the bank makes at most one charge per key and answers a repeat with the same charge.
 *
 * @param input `{ merchantRef, amountMinor, currency }`; `amountMinor` a positive integer in minor units.
 * @param options `{ bankUrl, timeoutMs }`.
 * @returns
 *  - `{ kind: "charge", charge, replayed }` (201 new, or 200 repeat with `replayed: true`); `charge.status` is
 *    `pending` (the outcome arrives by webhook), `succeeded` or `declined`;
 *  - `{ kind: "rejected", status, code }`: 409 `idempotency_key_cancelled` (the key was cancelled, no charge will
 *    ever exist), 422 `idempotency_key_reused` (same key, different amount or currency), 400 `invalid_request`;
 *  - `{ kind: "unknown", reason }`: `timeout`, `network` (refused, reset, reply dropped), `server_error` (5xx),
 *    `bad_response` (unreadable, or a charge for another merchant reference). A charge may exist.
 * @throws RangeError/TypeError only for invalid options (a bug).
 */
export async function createCharge(input: CreateChargeInput, options: BankCallOptions): Promise<ChargeResult> {
  const raw = await call(options, "POST", "charges", {
    idempotencyKey: input.merchantRef,
    body: { merchantRef: input.merchantRef, amount: input.amountMinor, currency: input.currency },
  });
  if (raw.kind === "unknown") return raw;
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = chargeSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("charge body does not match the protocol");
  // A charge for another key would credit the wrong row: treat it as an unreadable answer, never as success.
  if (parsed.data.merchantRef !== input.merchantRef) return badResponse("charge for another merchant reference");
  return { kind: "charge", charge: parsed.data, replayed: raw.status === 200 };
}

/**
 * Looks up the charge made for a merchant reference: `GET /charges?merchantRef=...` (contract section 5).
 * Used to settle a row whose `createCharge` outcome was unknown, and by the reconciler.
 *
 * @returns `{ kind: "found", charge }`, `{ kind: "not_found" }` (404: no charge for this key, yet),
 *   `{ kind: "rejected", ... }` (other 4xx), or `{ kind: "unknown", ... }`.
 * @throws only for invalid options (a bug).
 */
export async function getCharge(merchantRef: string, options: BankCallOptions): Promise<GetChargeResult> {
  const raw = await call(options, "GET", `charges?${new URLSearchParams({ merchantRef }).toString()}`);
  if (raw.kind === "unknown") return raw;
  if (raw.status === 404) return { kind: "not_found" };
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = chargeSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("charge body does not match the protocol");
  if (parsed.data.merchantRef !== merchantRef) return badResponse("charge for another merchant reference");
  return { kind: "found", charge: parsed.data };
}

export interface ListChargesOptions extends BankCallOptions {
  /** Page size, 1..1000 (the bank's maximum); the bank defaults to 100. */
  limit?: number;
  /** A charge id from the previous page: continue strictly after it (pages never repeat or skip a charge). */
  startingAfter?: string;
}

/**
 * Lists charges created at or after `sinceIso`, oldest first, one bounded page: `GET /charges?since=...`
 * (contract section 5, for the reconciler's bank-to-ledger direction). To read everything, call again with
 * `startingAfter` set to the last charge's id while `hasMore` is true.
 *
 * @param sinceIso an ISO-8601 time with offset, e.g. `2026-01-01T00:00:00.000Z`.
 * @returns `{ kind: "page", charges, hasMore }`, `{ kind: "rejected", ... }` (e.g. 400 for a bad time), or
 *   `{ kind: "unknown", ... }`.
 * @throws only for invalid options (a bug).
 */
export async function listChargesSince(sinceIso: string, options: ListChargesOptions): Promise<ListChargesResult> {
  const query = new URLSearchParams({ since: sinceIso });
  if (options.limit !== undefined) query.set("limit", String(options.limit));
  if (options.startingAfter !== undefined) query.set("startingAfter", options.startingAfter);
  const raw = await call(options, "GET", `charges?${query.toString()}`);
  if (raw.kind === "unknown") return raw;
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = pageSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("charge page does not match the protocol");
  return { kind: "page", charges: parsed.data.charges, hasMore: parsed.data.hasMore };
}

/**
 * Makes a merchant reference unusable if no charge was made for it: `POST /charges/cancel` with
 * `Idempotency-Key: <merchantRef>` (contract section 5). After `cancelled`, any later `createCharge` with this
 * key is rejected with 409, so a request still in flight can never charge. Safe to repeat.
 *
 * @returns `{ kind: "cancelled" }` (no charge exists and none ever will), `{ kind: "charge_exists", charge }`
 *   (too late: a charge was made; settle the row from it), `{ kind: "rejected", ... }`, or
 *   `{ kind: "unknown", ... }` (the key may or may not be cancelled: retry).
 * @throws only for invalid options (a bug).
 */
export async function cancelCharge(merchantRef: string, options: BankCallOptions): Promise<CancelChargeResult> {
  const raw = await call(options, "POST", "charges/cancel", { idempotencyKey: merchantRef, body: { merchantRef } });
  if (raw.kind === "unknown") return raw;
  const failed = classifyStatus(raw);
  if (failed) return failed;
  const parsed = cancelSchema.safeParse(raw.json);
  if (!parsed.success) return badResponse("cancel body does not match the protocol");
  if (parsed.data.charge) {
    if (parsed.data.charge.merchantRef !== merchantRef) return badResponse("charge for another merchant reference");
    return { kind: "charge_exists", charge: parsed.data.charge };
  }
  if (!parsed.data.cancelled) return badResponse("neither cancelled nor charged");
  return { kind: "cancelled" };
}
