import { createHash } from "node:crypto";

/**
 * The key of an ended session (lib/auth/record-ended-sessions.ts): the SHA-256 of its token, hex. The token itself
 * is a credential and is not kept.
 *
 * @param token a session token as better-auth stores it (the cookie's value before its signature).
 * @returns 64 hex characters.
 */
export function sessionTokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
