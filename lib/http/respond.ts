/**
 * The one place that turns outcomes into HTTP responses (style guide: one error-to-HTTP map).
 */
import { randomUUID } from "node:crypto";
import { log } from "../log";
import { currentRequestId } from "./request-context";
import { problem, PROBLEM_CONTENT_TYPE, type ProblemCode } from "../problems";
import type { OperationResult } from "../ledger";

/** Header on every replayed response (contract section 3). */
const REPLAYED_HEADER = "Idempotent-Replayed";

/** A JSON response with `application/json`. Never pass values containing `bigint`. */
export function jsonResponse(status: number, value: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...headers },
  });
}

/**
 * The extension members of a problem that is answered now and never stored: the caller's `extensions` plus the
 * current request's `requestId` (contract section 4; absent outside a request, e.g. in a server action).
 * Stored outcomes (402, 422 balance_limit_exceeded) are built by lib/ledger/views.ts without it, so that a
 * replay stays byte-identical.
 */
function withRequestId(extensions: Record<string, unknown>): Record<string, unknown> {
  const requestId = currentRequestId();
  return requestId === undefined ? extensions : { ...extensions, requestId };
}

/**
 * An RFC 9457 problem response for `code` (status from the one map in lib/problems.ts), never stored: its body
 * carries the request id (contract section 4).
 */
export function problemResponse(
  code: ProblemCode,
  detail: string,
  extensions: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  const body = problem(code, detail, withRequestId(extensions));
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { "content-type": PROBLEM_CONTENT_TYPE, "cache-control": "no-store", ...headers },
  });
}

/**
 * A stored first response, sent byte for byte: same status, same body text; `Idempotent-Replayed: true`
 * when it is a replay (contract section 3). Error statuses carry the problem media type.
 */
function storedResponse(status: number, body: string, replayed: boolean): Response {
  const headers: Record<string, string> = {
    "content-type": status >= 400 ? PROBLEM_CONTENT_TYPE : "application/json",
    "cache-control": "no-store",
  };
  if (replayed) headers[REPLAYED_HEADER] = "true";
  return new Response(body, { status, headers });
}

/** The outcome shape server actions return: the same status and body bytes the API would send. */
export interface ActionOutcome {
  readonly status: number;
  readonly body: string;
  readonly replayed: boolean;
}

/** Maps an operation's result to what the API sends and what a server action returns (contract section 3). */
export function operationOutcome(result: OperationResult): ActionOutcome & { headers: Record<string, string> } {
  switch (result.kind) {
    case "response":
      return { status: result.response.status, body: result.response.body, replayed: result.replayed, headers: {} };
    case "mismatch": {
      const body = problem(
        "idempotency_key_reused",
        `This key was first used with other parameters: ${result.fields.join(", ")}.`,
        withRequestId({ fields: result.fields }),
      );
      return { status: body.status, body: JSON.stringify(body), replayed: false, headers: {} };
    }
    case "in_progress": {
      const body = problem(
        "request_in_progress",
        "The first request with this key is still running; retry shortly.",
        withRequestId({}),
      );
      return {
        status: body.status,
        body: JSON.stringify(body),
        replayed: false,
        headers: { "Retry-After": String(result.retryAfterS) },
      };
    }
    case "refused": {
      const body = problem(result.code, result.detail, withRequestId({}));
      const headers: Record<string, string> =
        result.retryAfterS === undefined ? {} : { "Retry-After": String(result.retryAfterS) };
      return { status: body.status, body: JSON.stringify(body), replayed: false, headers };
    }
  }
}

/** The HTTP response for an operation's result. */
export function operationResponse(result: OperationResult): Response {
  const outcome = operationOutcome(result);
  const response = storedResponse(outcome.status, outcome.body, outcome.replayed);
  for (const [name, value] of Object.entries(outcome.headers)) response.headers.set(name, value);
  return response;
}

/**
 * Logs an unexpected error and returns the 500 problem that names only the request id (contract section 3: no
 * internals in the body). The id is the current request's (contract section 4), or a fresh one outside a request.
 */
export function internalErrorResponse(error: unknown, context: Record<string, unknown> = {}): Response {
  const requestId = currentRequestId() ?? randomUUID();
  log().error({ err: error, requestId, ...context }, "unhandled error");
  return problemResponse("internal_error", `Something went wrong on our side. Quote request id ${requestId}.`, {
    requestId,
  });
}

/**
 * What a handler returns when the client disconnected before it finished: logged at info level, answered with
 * 400 (never read). Work already committed stays committed and replays on the client's retry.
 */
export function clientGoneResponse(request: Request): Response {
  log().info({ method: request.method, path: new URL(request.url).pathname }, "client disconnected before the answer");
  return problemResponse("invalid_request", "The request was aborted by the client.");
}
