import { getSessionCookie } from "better-auth/cookies";
import { pool } from "../db";
import type { EndedSessionReason } from "./record-ended-sessions";
import { sessionTokenHash } from "./session-token-hash";

const REASON_SQL = `SELECT reason FROM ended_sessions WHERE token_hash = $1`;

/**
 * The token inside better-auth's session cookie value: `<token>.<signature>`, URL-encoded. The signature is not
 * checked: the answer is only ever the reason a session of that token ended, which whoever holds the token knew.
 */
function tokenOf(cookieValue: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(cookieValue);
  } catch {
    return null;
  }
  const token = decoded.split(".")[0] ?? "";
  return token.length > 0 ? token : null;
}

/**
 * Why the session this request's cookie names was ended by something else (decision 056), for the sign-in page to
 * say: `password_changed` when the password was changed in another browser. Call it only once the session has been
 * found invalid.
 *
 * @param requestHeaders the request's headers (the session cookie).
 * @returns the reason, or null: no cookie, or a session that ended otherwise (signed out, expired, never existed).
 * @throws database errors.
 */
export async function getEndedSessionReason(requestHeaders: Headers): Promise<EndedSessionReason | null> {
  const cookie = getSessionCookie(requestHeaders);
  const token = cookie ? tokenOf(cookie) : null;
  if (!token) return null;
  const { rows } = await pool().query<{ reason: EndedSessionReason }>(REASON_SQL, [sessionTokenHash(token)]);
  return rows[0]?.reason ?? null;
}
