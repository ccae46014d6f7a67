import { isAPIError } from "better-auth/api";
import { auth } from "./auth";
import { NAME_MAX_LENGTH } from "./credential-fields";
import { pool } from "../db";
import { retryAfterFrom } from "./sign-in-with-password";

export type SignUpWithPasswordResult =
  | { kind: "created"; userId: string; sessionToken: string }
  | { kind: "duplicate_email" }
  | { kind: "invalid_email" }
  | { kind: "invalid_password" }
  | { kind: "invalid_name" }
  | { kind: "throttled"; retryAfterS: number };

/**
 * Creates an account with email and password through better-auth (which hashes the password with argon2id,
 * stores it in `"account"`, and signs the new user in). Inside a server action the session cookie is set on
 * the response by `nextCookies()`. The role is always 'user': `role` is not accepted from input.
 *
 * @param input.email the address (better-auth case-folds it; the unique index is on the folded form).
 * @param input.password 10..128 characters (see PASSWORD_MIN_LENGTH / PASSWORD_MAX_LENGTH in ./auth.ts).
 * @param input.name display name; defaults to the part of the email before `@`.
 * @param requestHeaders the incoming request's headers, or `new Headers()` outside a request.
 * @returns `created` with the user's id and the new session's token; `duplicate_email` when an account with
 *   that email exists, including when a concurrent sign-up for the same email won the race (the unique index
 *   `user_email_key` decides); `invalid_email`; `invalid_password` (too short or too long); `invalid_name` (empty, over 100 characters, or with a control character: case C31);
 *   `throttled` when this address made SIGNUPS_PER_HOUR sign-ups this hour (lib/limits/auth-throttles.ts).
 * @throws any other better-auth `APIError` and database errors.
 */
export async function signUpWithPassword(
  input: { email: string; password: string; name?: string | undefined },
  requestHeaders: Headers,
): Promise<SignUpWithPasswordResult> {
  // The default name is the email's local part, cut to the longest name allowed (a local part may be longer).
  const name = input.name ?? (input.email.split("@")[0] ?? "").slice(0, NAME_MAX_LENGTH);
  try {
    const result = await auth().api.signUpEmail({
      body: { email: input.email, password: input.password, name },
      headers: requestHeaders,
    });
    // autoSignIn is on, so a token is always present; a null one would mean the configuration changed.
    if (!result.token) throw new Error("sign-up returned no session token: is emailAndPassword.autoSignIn off?");
    return { kind: "created", userId: result.user.id, sessionToken: result.token };
  } catch (error) {
    if (!isAPIError(error)) throw error;
    if (error.statusCode === 429) return { kind: "throttled", retryAfterS: retryAfterFrom(error) };
    const code = error.body?.code ?? "";
    if (code === "INVALID_NAME") return { kind: "invalid_name" };
    if (code === "USER_ALREADY_EXISTS_USE_ANOTHER_EMAIL" || code === "USER_ALREADY_EXISTS")
      return { kind: "duplicate_email" };
    // better-auth's body schema reports a bad address as VALIDATION_ERROR naming the field `[body.email]`.
    const message = typeof error.body?.message === "string" ? error.body.message : "";
    if (code === "INVALID_EMAIL" || (code === "VALIDATION_ERROR" && message.startsWith("[body.email]"))) {
      return { kind: "invalid_email" };
    }
    if (
      code === "PASSWORD_TOO_SHORT" ||
      code === "PASSWORD_TOO_LONG" ||
      code === "INVALID_PASSWORD" ||
      code === "INVALID_NEW_PASSWORD"
    ) {
      return { kind: "invalid_password" };
    }
    // better-auth checks for an existing email, then inserts. Two concurrent sign-ups for one email both pass
    // the check; the loser's INSERT violates user_email_key (23505) inside better-auth's transaction, which
    // rolls back and reports FAILED_TO_CREATE_USER. The winner's row is committed by then, so reading it here
    // (a separate statement, after the loser's transaction ended) tells a lost race from a real failure.
    if (code === "FAILED_TO_CREATE_USER" && (await emailExists(input.email))) return { kind: "duplicate_email" };
    throw error;
  }
}

async function emailExists(email: string): Promise<boolean> {
  const { rowCount } = await pool().query(`SELECT 1 FROM "user" WHERE email = $1`, [email.toLowerCase()]);
  return (rowCount ?? 0) > 0;
}
