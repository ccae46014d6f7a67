/**
 * Where a signed-in person starts: an admin on the admin page (their own wallet is usually empty, and what needs
 * attention is there), everyone else on their wallet.
 *
 * @param role the principal's role.
 * @returns "/admin" for an admin, "/wallet" otherwise.
 */
export function homePath(role: "user" | "admin"): "/admin" | "/wallet" {
  return role === "admin" ? "/admin" : "/wallet";
}
