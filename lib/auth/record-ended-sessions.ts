import { pool } from "../db";
import { SESSION_EXPIRES_IN_S } from "./auth";
import { sessionTokenHash } from "./session-token-hash";

/** Why something other than the browser ended a session: the one reason the sign-in page names (decision 056). */
export type EndedSessionReason = "password_changed";

// Rows older than a session's lifetime answer for no session that could still be presented: pruned on each write
// (one indexed DELETE; a password change is rare).
const RECORD_SQL = `
WITH pruned AS (DELETE FROM ended_sessions WHERE ended_at < now() - make_interval(secs => $4))
INSERT INTO ended_sessions (token_hash, user_id, reason)
SELECT unnest($1::text[]), $2, $3
ON CONFLICT (token_hash) DO UPDATE SET reason = excluded.reason, ended_at = now()`;

/**
 * Records that these sessions of `userId` ended for `reason` (their tokens read before, with
 * lib/auth/list-live-session-tokens.ts), so a browser that still presents one of them is told why on the sign-in page
 * (decision 056). Only hashes are stored; rows older than a session's lifetime
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
