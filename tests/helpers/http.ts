/**
 * HTTP helpers for the `http` project: real requests to the built app and the sandbox bank on 127.0.0.1.
 */
import { createHmac } from "node:crypto";
import { createApiTokenOrThrow } from "../../lib/api-tokens/create-api-token";
import { createTestUser, type TestUser } from "./db";
import { appUrl, bankUrl, testStack } from "./stack";
import { waitFor } from "./wait";

export interface ApiUser extends TestUser {
  token: string;
}

/** A new user with a personal API token (role "user" unless given). */
export async function createApiUser(role: "user" | "admin" = "user"): Promise<ApiUser> {
  const user = await createTestUser({ role });
  const { token } = await createApiTokenOrThrow({ userId: user.id, name: "tests" });
  return { ...user, token };
}

export interface ApiResult {
  status: number;
  headers: Headers;
  /** The body exactly as received. */
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: any;
}

/**
 * Sends a request to the app. `body` is sent as JSON text; `rawBody` is sent verbatim (for malformed or
 * exact-token bodies). Content type defaults to application/json when there is a body.
 */
export async function api(
  path: string,
  options: {
    method?: string;
    token?: string | null;
    body?: unknown;
    rawBody?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<ApiResult> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  const text = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (text !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type"))
    headers["content-type"] = "application/json";
  const response = await fetch(`${appUrl()}${path}`, {
    method: options.method ?? (text === undefined ? "GET" : "POST"),
    headers,
    body: text,
  });
  const received = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(received);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text: received, json };
}

/** Polls `GET /api/v1/topups/{refId}` until its status is terminal (every 100 ms, at most `timeoutMs`). */
export async function waitForTopupStatus(token: string, refId: string, timeoutMs = 15_000): Promise<any> {
  const result = await waitFor(
    () => api(`/api/v1/topups/${encodeURIComponent(refId)}`, { token }),
    (read) => read.json?.topup?.status === "succeeded" || read.json?.topup?.status === "failed",
    { what: `top-up ${refId} to finish`, timeoutMs, intervalMs: 100 },
  );
  return result.json.topup;
}

/** The sandbox bank's charges for a merchant reference (via `GET /charges?since=` filtered here). */
export async function bankChargesFor(merchantRef: string): Promise<any[]> {
  const response = await fetch(`${bankUrl()}/charges?since=1970-01-01T00:00:00.000Z&limit=1000`);
  const body = (await response.json()) as { charges: { merchantRef: string }[] };
  return body.charges.filter((c) => c.merchantRef === merchantRef);
}

/**
 * Polls the stack's bank (every 50 ms, at most `timeoutMs`, default 10 s) until the first charge of `merchantRef`
 * passes `accept` (default: settled, no longer `pending`), and returns it. Throws on the deadline.
 */
export async function waitForBankCharge(
  merchantRef: string,
  accept: (charge: { status: string }) => boolean = (charge) => charge.status !== "pending",
  timeoutMs = 10_000,
): Promise<any> {
  const [charge] = await waitFor(
    () => bankChargesFor(merchantRef),
    ([first]) => first !== undefined && accept(first),
    { what: `the bank's charge of ${merchantRef} to reach the expected status`, timeoutMs, intervalMs: 50 },
  );
  return charge;
}

/**
 * Signs a webhook body the way the bank does (contract section 5), with the stack's first secret: HMAC-SHA256 over
 * `<t>.` and the raw bytes (a string is signed as its UTF-8 bytes).
 */
export function signWebhookBody(
  rawBody: string | Buffer,
  nowSeconds = Math.floor(Date.now() / 1000),
  secret?: string,
): string {
  const key = secret ?? testStack().webhookSecrets.split(",")[0]!;
  const mac = createHmac("sha256", key).update(`${nowSeconds}.`).update(rawBody).digest("hex");
  return `t=${nowSeconds},v1=${mac}`;
}
