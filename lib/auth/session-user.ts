/**
 * The signed-in user for server components and server actions (cookie sessions only; API tokens are for
 * `/api/v1`, see ./principal.ts).
 */
import { cache } from "react";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { getEndedSessionReason } from "./get-ended-session-reason";
import { getSessionPrincipal, type Principal } from "./principal";

/**
 * The user signed in to this request's browser session, read once per server render (React `cache`), so a
 * layout and a page asking both cost one SELECT.
 *
 * @returns the principal (`via: "session"`), or null when nobody is signed in.
 * @throws the database driver's error when PostgreSQL is unreachable; Next's error when called outside a
 *   request (`headers()` needs one).
 */
export const getSessionUser: () => Promise<Principal | null> = cache(async () => {
  return await getSessionPrincipal(await headers());
});

/**
 * Where to send a browser that is not signed in: `/sign-in`, or `/sign-in?ended=password-changed` when its cookie
 * names a session that a password change in another browser ended (docs/decisions/056), so the page says why.
 *
 * @returns the sign-in page's path.
 * @throws database errors; Next's error outside a request.
 */
export async function signInPath(): Promise<string> {
  const reason = await getEndedSessionReason(await headers());
  return reason === "password_changed" ? "/sign-in?ended=password-changed" : "/sign-in";
}

/**
 * Like {@link getSessionUser}, but sends anyone not signed in to the sign-in page ({@link signInPath}: a redirect,
 * so it never returns null).
 *
 * @returns the signed-in principal.
 * @throws Next's redirect signal (do not catch it) when nobody is signed in.
 */
export async function requireSessionUser(): Promise<Principal> {
  const user = await getSessionUser();
  if (!user) redirect(await signInPath());
  return user;
}
