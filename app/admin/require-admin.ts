import { requireSessionUser } from "@/lib/auth/session-user";
import type { Principal } from "@/lib/auth/principal";

/**
 * The signed-in admin of this request, for admin pages and server actions: sends anyone not signed in to
 * `/sign-in` (Next's redirect signal, do not catch it), and returns null for a signed-in user who is not an
 * admin (the page then shows its 403 message; an action refuses).
 */
export async function currentAdmin(): Promise<Principal | null> {
  const user = await requireSessionUser();
  return user.role === "admin" ? user : null;
}
