/**
 * Webhook signatures, shared by the sandbox bank (signs) and the app (verifies). Contract section 5:
 *
 *   Bank-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body bytes>")>[,v1=...]
 *
 * - The MAC covers the raw body bytes exactly as sent (docs/development.md note 22): never a re-serialised JSON value.
 * - During secret rotation the header carries one `v1=` per configured secret; a verifier accepts the event when
 *   any `v1` matches any of its secrets, so the bank and the app can move to a new secret one at a time.
 * - Comparison is constant-time (`crypto.timingSafeEqual` on two 32-byte buffers).
 * - Tolerance is 300 s by default (contract section 5): a replayed old delivery is refused as "stale".
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** The HTTP header that carries the signature (contract section 5). */
export const SIGNATURE_HEADER = "Bank-Signature";

/** Contract section 5: a signature older or newer than 300 s is refused. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * Upper bound on the header's length. 4096 bytes holds a timestamp and 60 signatures; anything longer is not a
 * header this protocol produces, and refusing it early bounds the work an attacker can make us do.
 */
export const MAX_HEADER_LENGTH = 4096;

/**
 * At most 16 `v1=` values are examined. Rotation needs two (old and new secret); 16 leaves room for unusual
 * operations while bounding the HMAC comparisons per request to 16 x secrets.
 */
export const MAX_SIGNATURES = 16;

/** A SHA-256 MAC is 32 bytes, i.e. 64 hex characters. */
const V1_PATTERN = /^[0-9a-f]{64}$/i;
/** Unix seconds: 1..12 digits (12 digits reaches past the year 30000; more is never a valid clock). */
const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/;

export type SignatureFailureReason = "missing" | "malformed" | "stale" | "mismatch";

export type SignatureVerification = { ok: true } | { ok: false; reason: SignatureFailureReason };

export interface VerifyWebhookSignatureInput {
  /** The request body exactly as received, before any parsing (docs/development.md note 22). */
  rawBody: Buffer;
  /** The `Bank-Signature` header value, or null when the request has none. */
  header: string | null;
  /** Every secret currently accepted (rotation); at least one, none empty. */
  secrets: string[];
  /** The verifier's clock, in unix seconds. */
  nowSeconds: number;
  /** Allowed clock distance in seconds, both directions. Default {@link DEFAULT_TOLERANCE_SECONDS}. */
  toleranceSeconds?: number;
}

function assertSecrets(secrets: string[], caller: string): void {
  if (!Array.isArray(secrets) || secrets.length === 0) {
    throw new TypeError(`${caller}: at least one webhook secret is required`);
  }
  if (secrets.some((s) => typeof s !== "string" || s.length === 0)) {
    throw new TypeError(`${caller}: webhook secrets must be non-empty strings`);
  }
}

function mac(secret: string, timestamp: string, rawBody: Buffer): Buffer {
  // The signed payload is "<t>." followed by the body's bytes, concatenated as bytes (never decoded as text).
  return createHmac("sha256", secret).update(`${timestamp}.`, "utf8").update(rawBody).digest();
}

function toBuffer(rawBody: Buffer | string): Buffer {
  return typeof rawBody === "string" ? Buffer.from(rawBody, "utf8") : rawBody;
}

/**
 * Computes the `Bank-Signature` header value for a webhook body (contract section 5).
 *
 * @param rawBody the exact bytes that will be sent (a string is encoded as UTF-8).
 * @param secrets the signing secrets; one `v1=` is emitted per secret, in the given order (rotation).
 * @param nowSeconds the signing time in unix seconds (an integer; fractions are truncated).
 * @returns e.g. `t=1767225600,v1=5f2c...,v1=9ab0...`.
 * @throws TypeError when `secrets` is empty or holds an empty string, or `nowSeconds` is not a finite
 *   non-negative number (configuration bugs, not runtime outcomes).
 */
export function signWebhook(rawBody: Buffer | string, secrets: string[], nowSeconds: number): string {
  assertSecrets(secrets, "signWebhook");
  if (!Number.isFinite(nowSeconds) || nowSeconds < 0) {
    throw new TypeError("signWebhook: nowSeconds must be a non-negative number of unix seconds");
  }
  const timestamp = String(Math.floor(nowSeconds));
  const body = toBuffer(rawBody);
  const parts = [`t=${timestamp}`];
  for (const secret of secrets) parts.push(`v1=${mac(secret, timestamp, body).toString("hex")}`);
  return parts.join(",");
}

type ParsedHeader = { timestamp: string; signatures: Buffer[] } | null;

function parseHeader(header: string): ParsedHeader {
  if (header.length > MAX_HEADER_LENGTH) return null;
  let timestamp: string | undefined;
  const signatures: Buffer[] = [];
  for (const rawPart of header.split(",")) {
    const part = rawPart.trim();
    const eq = part.indexOf("=");
    if (eq <= 0) return null;
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    if (key === "t") {
      // Two timestamps would let an attacker choose which one we check: refuse the header.
      if (timestamp !== undefined || !TIMESTAMP_PATTERN.test(value)) return null;
      timestamp = value;
    } else if (key === "v1") {
      // Validate before decoding: Buffer.from(hex) silently stops at the first invalid character.
      if (!V1_PATTERN.test(value)) return null;
      if (signatures.length < MAX_SIGNATURES) signatures.push(Buffer.from(value, "hex"));
    }
    // Other schemes (v0=, v2=, ...) are ignored so a future scheme can be added beside v1 without breaking us.
  }
  if (timestamp === undefined || signatures.length === 0) return null;
  return { timestamp, signatures };
}

/**
 * Verifies a webhook's `Bank-Signature` header against its raw body (contract section 5).
 *
 * Passes when any `v1` signature equals HMAC-SHA256(secret, "<t>.<raw body>") for any of `secrets` and `t` is
 * within `toleranceSeconds` of `nowSeconds`. Every comparison is `crypto.timingSafeEqual` on two 32-byte
 * buffers, so the time taken does not reveal how much of a forged signature was right.
 *
 * @returns `{ ok: true }`, or `{ ok: false, reason }` with reason
 *   - `"missing"`: no header, or an empty one;
 *   - `"malformed"`: not `t=<digits>` plus at least one `v1=<64 hex>` (or a duplicated `t`, or too long);
 *   - `"mismatch"`: well-formed but no signature matches any secret (a tampered body or a wrong secret);
 *   - `"stale"`: a signature matches but `t` is more than `toleranceSeconds` away from `nowSeconds`.
 *   The app answers 400 `invalid_signature` for every failure and changes nothing.
 * @throws TypeError when `secrets` is empty or holds an empty string (a configuration bug).
 */
export function verifyWebhookSignature(input: VerifyWebhookSignatureInput): SignatureVerification {
  const { rawBody, header, secrets, nowSeconds } = input;
  const toleranceSeconds = input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  assertSecrets(secrets, "verifyWebhookSignature");
  if (header === null || header === undefined || header.trim() === "") return { ok: false, reason: "missing" };
  const parsed = parseHeader(header);
  if (!parsed) return { ok: false, reason: "malformed" };

  let matched = false;
  for (const secret of secrets) {
    const expected = mac(secret, parsed.timestamp, rawBody);
    for (const candidate of parsed.signatures) {
      // Both buffers are 32 bytes (V1_PATTERN guarantees 64 hex characters), as timingSafeEqual requires.
      if (timingSafeEqual(expected, candidate)) matched = true;
    }
  }
  if (!matched) return { ok: false, reason: "mismatch" };
  if (Math.abs(nowSeconds - Number(parsed.timestamp)) > toleranceSeconds) return { ok: false, reason: "stale" };
  return { ok: true };
}
