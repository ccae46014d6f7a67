import { pool } from "../db";

// Every unexpired session of the user.
const LIVE_TOKENS_SQL = `
SELECT token FROM "session" WHERE "userId" = $1 AND "expiresAt" > now()`;

/**
 * The tokens of the user's live sessions, read just before something ends them all (a password change revokes every
 * other session: lib/auth/change-password.ts), so that lib/auth/record-ended-sessions.ts can record afterwards why
 * they ended.
 *
 * @param userId the user whose sessions are about to end.
 * @returns the tokens, as better-auth stores them (the cookie's value before its signature).
 * @throws database errors.
 */
export async function listLiveSessionTokens(userId: string): Promise<string[]> {
  const { rows } = await pool().query<{ token: string }>(LIVE_TOKENS_SQL, [userId]);
  return rows.map((row) => row.token);
}
