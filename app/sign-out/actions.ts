"use server";

import { headers } from "next/headers";
import { redirect } from "next/navigation";
import { auth } from "@/lib/auth/auth";

/**
 * Signs the browser out: deletes its session row and clears the cookie (set on this response by
 * `nextCookies()`), then redirects to /sign-in. For a `<form action={signOutAction}>` in the header; works
 * without JavaScript. Safe to call when not signed in (it only clears the cookie).
 *
 * @throws Next's redirect signal (always; do not catch it).
 */
export async function signOutAction(): Promise<void> {
  await auth().api.signOut({ headers: await headers() });
  redirect("/sign-in?signed-out=1");
}
