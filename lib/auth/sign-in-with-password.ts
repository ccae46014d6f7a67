import { isAPIError } from "better-auth/api";
import { auth } from "./auth";

export type SignInWithPasswordResult =
  | { kind: "signed_in"; userId: string; role: "user" | "admin" }
  | { kind: "wrong_credentials" }
  | { kind: "throttled"; retryAfterS: number };

/** Fallback wait when a 429 carries no usable Retry-After, in seconds: the pair throttle's whole window. */
const DEFAULT_RETRY_AFTER_S = 900;

/** The whole seconds of a better-auth 429's Retry-After, or {@link DEFAULT_RETRY_AFTER_S}. */
export function retryAfterFrom(error: { headers?: HeadersInit | undefined }): number {
  const retryAfterS = Number(new Headers(error.headers).get("retry-after"));
  return Number.isInteger(retryAfterS) && retryAfterS > 0 ? retryAfterS : DEFAULT_RETRY_AFTER_S;
}

/**
 * Signs a user in with email and password through better-auth. Inside a server action the session cookie is
 * set on the response by the `nextCookies()` plugin; elsewhere the session is created but no cookie is sent.
 *
 * Unknown email and wrong password give the same outcome (and better-auth hashes a password in both cases, so
 * timing does not tell them apart either): sign-in never reveals whether an account exists.
 *
 * @param input.email the address as typed (better-auth case-folds it).
 * @param input.password the password as typed, at most 128 characters.
 * @param requestHeaders the incoming request's headers (`await headers()` in a server action).
 * @returns `signed_in` with the user's id and role (an admin's first page is /admin); `wrong_credentials` (also for
 *   a malformed email or over-long password); `throttled` after too many failed attempts for this email and address
 *   (lib/limits/auth-throttles.ts), with the seconds to wait.
 * @throws any other better-auth `APIError` (a misconfiguration) and database errors: those are bugs or outages,
 *   not outcomes.
 */
export async function signInWithPassword(
  input: { email: string; password: string },
  requestHeaders: Headers,
): Promise<SignInWithPasswordResult> {
  try {
    const result = await auth().api.signInEmail({
      body: { email: input.email, password: input.password },
      headers: requestHeaders,
    });
    return { kind: "signed_in", userId: result.user.id, role: result.user.role === "admin" ? "admin" : "user" };
  } catch (error) {
    if (!isAPIError(error)) throw error;
    if (error.statusCode === 401) return { kind: "wrong_credentials" };
    if (error.statusCode === 400 && ["INVALID_EMAIL", "PASSWORD_TOO_LONG"].includes(error.body?.code ?? "")) {
      return { kind: "wrong_credentials" };
    }
    if (error.statusCode === 429) return { kind: "throttled", retryAfterS: retryAfterFrom(error) };
    throw error;
  }
}
