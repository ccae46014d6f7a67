/**
 * The signed-in user for server components and server actions (cookie sessions only; API tokens are for
 * `/api/v1`, see ./principal.ts).
 */
import { cache } from "react";
import { headers } from "next/headers";
import { redirect } from "next/navigation";
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
 * Like {@link getSessionUser}, but sends anyone not signed in to `/sign-in` (a redirect, so it never returns
 * null).
 *
 * @returns the signed-in principal.
 * @throws Next's redirect signal (do not catch it) when nobody is signed in.
 */
export async function requireSessionUser(): Promise<Principal> {
  const user = await getSessionUser();
  if (!user) redirect("/sign-in");
  return user;
}
