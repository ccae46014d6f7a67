/**
 * Who is making a request: a signed-in browser (better-auth session cookie) or a script holding a personal
 * API token (contract section 4). The API's route wrapper calls {@link getPrincipal}; pages and server actions
 * use ./session-user.ts.
 */
import { auth } from "./auth";
import { findPrincipalByToken } from "../api-tokens/find-principal-by-token";

export interface Principal {
  /** `"user".id`: the only source of `user_id` for ledger keys (contract section 1). */
  userId: string;
  email: string;
  role: "user" | "admin";
  /** How the request authenticated. */
  via: "session" | "token";
}

/** `Bearer` followed by one token, case-insensitive scheme (RFC 6750 section 2.1; RFC 9110 section 11.1). */
const BEARER_PATTERN = /^Bearer +(\S+) *$/i;

/**
 * Authenticates a request from its headers.
 *
 * - With an `Authorization` header, only that header counts: `Bearer <token>` is looked up as a personal API
 *   token (one indexed SELECT, no write). A token that is unknown, revoked or malformed, or any other scheme,
 *   gives null, and the cookie is NOT consulted: a client that sends credentials must get exactly those
 *   credentials' answer, and a script's bad token must not quietly ride on a browser cookie.
 * - Without it, the better-auth session cookie is checked (one SELECT; cookie cache is off).
 *
 * @param headers the request's headers.
 * @returns the principal, or null when the request is not authenticated (the caller answers 401).
 * @throws the database driver's error when PostgreSQL is unreachable (the caller answers 500, never 401).
 */
export async function getPrincipal(headers: Headers): Promise<Principal | null> {
  const authorization = headers.get("authorization");
  if (authorization !== null) {
    const match = BEARER_PATTERN.exec(authorization);
    if (!match?.[1]) return null;
    return await findPrincipalByToken(match[1]);
  }
  return await getSessionPrincipal(headers);
}

/**
 * Authenticates by the better-auth session cookie only, ignoring any `Authorization` header (for pages and
 * server actions, which browsers reach with cookies).
 *
 * @param headers the request's headers (the `cookie` header is read).
 * @returns the principal (`via: "session"`), or null without a valid, unexpired session.
 * @throws the database driver's error when PostgreSQL is unreachable.
 */
export async function getSessionPrincipal(headers: Headers): Promise<Principal | null> {
  const result = await auth().api.getSession({ headers });
  if (!result) return null;
  const { user } = result;
  // Only the exact string 'admin' grants admin rights; the column's CHECK allows nothing but 'user' | 'admin'.
  return { userId: user.id, email: user.email, role: user.role === "admin" ? "admin" : "user", via: "session" };
}
