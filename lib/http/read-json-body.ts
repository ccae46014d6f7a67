/**
 * Reads a POST body as JSON under the API's limits (contract section 3): `application/json` only (415),
 * at most BODY_LIMIT_BYTES (413), valid UTF-8 and a single JSON object (400). Runs before any database or
 * Redis work.
 */
import { rawTopLevelMembers, RawJsonError, type RawMembers } from "./raw-json";
import type { ProblemCode } from "../problems";

export type BodyResult =
  | { readonly ok: true; readonly value: Record<string, unknown>; readonly raw: RawMembers }
  | { readonly ok: false; readonly code: ProblemCode; readonly detail: string };

/** True for `application/json` with optional parameters (e.g. `; charset=utf-8`), case-insensitive. */
export function isJsonContentType(header: string | null): boolean {
  if (!header) return false;
  return header.split(";")[0]!.trim().toLowerCase() === "application/json";
}

/**
 * Reads `request`'s body, holding at most `maxBytes` of it in memory: reading stops as soon as the body grows past
 * the limit, whatever its declared `Content-Length` says, and the rest is never read (the stream is cancelled).
 * Contract sections 3 and 5 (case C17). A declared length above the limit is not refused before reading on purpose:
 * answering before the body has started leaves its bytes in flight, and the connection's close then resets the
 * client before it reads the 413 (measured; docs/decisions/007).
 * Returns the bytes, or null when the body is larger than `maxBytes` (answer 413). Throws when the client aborts.
 */
export async function readBodyWithin(request: Request, maxBytes: number): Promise<Uint8Array | null> {
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * Reads and checks `request`'s body. Returns the parsed object and each top-level member's raw token
 * (for exact amount checks), or the problem code to answer with.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<BodyResult> {
  if (!isJsonContentType(request.headers.get("content-type"))) {
    return { ok: false, code: "unsupported_media_type", detail: "Send the body as application/json." };
  }
  const bytes = await readBodyWithin(request, maxBytes);
  if (!bytes) return { ok: false, code: "payload_too_large", detail: `The body must be at most ${maxBytes} bytes.` };
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return { ok: false, code: "invalid_request", detail: "The body is not valid UTF-8." };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: "invalid_request", detail: "The body is not valid JSON." };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, code: "invalid_request", detail: "The body must be a JSON object." };
  }
  try {
    return { ok: true, value: value as Record<string, unknown>, raw: rawTopLevelMembers(text) };
  } catch (error) {
    if (error instanceof RawJsonError) return { ok: false, code: "invalid_request", detail: error.message };
    throw error;
  }
}
