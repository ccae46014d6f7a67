import { createHash } from "node:crypto";
import { pool } from "../db";
import { SESSION_EXPIRES_IN_S } from "./auth";

/** Why something other than the browser ended a session: the one reason the sign-in page names (decision 056). */
export type EndedSessionReason = "password_changed";

/** The key of an ended session: the SHA-256 of its token, hex (the token itself is a credential and is not kept). */
export function sessionTokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

// Every live session of the user; `<> ALL` keeps the one the caller names (none: an empty array).
const LIVE_TOKENS_SQL = `
SELECT token FROM "session" WHERE "userId" = $1 AND "expiresAt" > now()`;

// Rows older than a session's lifetime answer for no session that could still be presented: pruned on each write
// (one indexed DELETE; a password change is rare).
const RECORD_SQL = `
WITH pruned AS (DELETE FROM ended_sessions WHERE ended_at < now() - make_interval(secs => $4))
INSERT INTO ended_sessions (token_hash, user_id, reason)
SELECT unnest($1::text[]), $2, $3
ON CONFLICT (token_hash) DO UPDATE SET reason = excluded.reason, ended_at = now()`;

/**
 * The tokens of the user's live sessions, read just before something ends them all (a password change revokes every
 * other session: lib/auth/change-password.ts), so that {@link recordEndedSessions} can say afterwards why they ended.
 *
 * @param userId the user whose sessions are about to end.
 * @returns the tokens, as better-auth stores them (the cookie's value before its signature).
 * @throws database errors.
 */
export async function listLiveSessionTokens(userId: string): Promise<string[]> {
  const { rows } = await pool().query<{ token: string }>(LIVE_TOKENS_SQL, [userId]);
  return rows.map((row) => row.token);
}

/**
 * Records that these sessions of `userId` ended for `reason`, so a browser that still presents one of them is told
 * why on the sign-in page (decision 056). Only hashes are stored; rows older than a session's lifetime
 * ({@link SESSION_EXPIRES_IN_S}) are deleted in the same statement. Recording a token again updates its row.
 *
 * @param input.userId the sessions' user; input.tokens their tokens (an empty list writes nothing);
 *   input.reason why they ended.
 * @throws database errors.
 */
export async function recordEndedSessions(input: {
  userId: string;
  tokens: readonly string[];
  reason: EndedSessionReason;
}): Promise<void> {
  if (input.tokens.length === 0) return;
  await pool().query(RECORD_SQL, [
    input.tokens.map(sessionTokenHash),
    input.userId,
    input.reason,
    SESSION_EXPIRES_IN_S,
  ]);
}
