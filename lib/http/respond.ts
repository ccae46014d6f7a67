/**
 * The one place that turns outcomes into HTTP responses (style guide: one error-to-HTTP map).
 */
import { randomUUID } from "node:crypto";
import { log } from "../log";
import { problem, PROBLEM_CONTENT_TYPE, type ProblemCode } from "../problems";
import type { OperationResult } from "../ledger/outcome";

/** Header on every replayed response (contract section 3). */
export const REPLAYED_HEADER = "Idempotent-Replayed";

/** A JSON response with `application/json`. Never pass values containing `bigint`. */
export function jsonResponse(status: number, value: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...headers },
  });
}

/** An RFC 9457 problem response for `code` (status from the one map in lib/problems.ts). */
export function problemResponse(
  code: ProblemCode,
  detail: string,
  extensions: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  const body = problem(code, detail, extensions);
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { "content-type": PROBLEM_CONTENT_TYPE, "cache-control": "no-store", ...headers },
  });
}

/**
 * A stored first response, sent byte for byte: same status, same body text; `Idempotent-Replayed: true`
 * when it is a replay (contract section 3). Error statuses carry the problem media type.
 */
export function storedResponse(status: number, body: string, replayed: boolean): Response {
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
        { fields: result.fields },
      );
      return { status: body.status, body: JSON.stringify(body), replayed: false, headers: {} };
    }
    case "in_progress": {
      const body = problem("request_in_progress", "The first request with this key is still running; retry shortly.");
      return {
        status: body.status,
        body: JSON.stringify(body),
        replayed: false,
        headers: { "Retry-After": String(result.retryAfterS) },
      };
    }
    case "refused": {
      const body = problem(result.code, result.detail);
      return { status: body.status, body: JSON.stringify(body), replayed: false, headers: {} };
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
 * Logs an unexpected error with a fresh request id and returns the 500 problem that names only that id
 * (contract section 3: no internals in the body).
 */
export function internalErrorResponse(error: unknown, context: Record<string, unknown> = {}): Response {
  const requestId = randomUUID();
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
