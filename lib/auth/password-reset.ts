/**
 * "Forgot password" (docs/decisions/054-mail-outbox.md), through better-auth's own flow: a request queues a
 * single-use link valid for an hour (lib/mail/account-mail.ts) when the address has an account, and answers the same
 * either way; the link's token then sets a new password once, signs every session out and revokes the API tokens.
 */
import { isAPIError } from "better-auth/api";
import { pool } from "../db";
import { ADDRESS_CONFIRMED_PATH, RESET_PASSWORD_PATH } from "../mail/account-mail";
import { auth } from "./auth";
import { newPasswordField } from "./credential-fields";
import { retryAfterFrom } from "./sign-in-with-password";

export type RequestPasswordResetResult = { kind: "requested" } | { kind: "throttled"; retryAfterS: number };

/**
 * Asks for a reset link for `email`.
 * @param email the address as typed (a malformed one is answered like an unknown one).
 * @param requestHeaders the request's headers (client address for the throttle: 5 requests per hour per typed
 *   address, 20 per client address, lib/limits/auth-throttles.ts `countMailRequest`).
 * @returns `requested` whether or not the address has an account (the answer never tells); `throttled` with the
 *   seconds to wait.
 * @throws database errors and unexpected better-auth errors.
 */
export async function requestPasswordReset(
  email: string,
  requestHeaders: Headers,
): Promise<RequestPasswordResetResult> {
  try {
    await auth().api.requestPasswordReset({
      body: { email, redirectTo: RESET_PASSWORD_PATH },
      headers: requestHeaders,
    });
  } catch (error) {
    if (!isAPIError(error)) throw error;
    if (error.statusCode === 429) return { kind: "throttled", retryAfterS: retryAfterFrom(error) };
    // A malformed address is refused by better-auth's body validation: answered like any other address.
    if (error.statusCode === 400) return { kind: "requested" };
    throw error;
  }
  return { kind: "requested" };
}

export type ResetPasswordResult = { kind: "reset" } | { kind: "invalid_password" } | { kind: "invalid_token" };

/**
 * Sets a new password with a reset link's token.
 * @param input.token the `token` query parameter of the reset page (at most 200 characters are passed on).
 * @param input.newPassword 10..128 characters.
 * @returns `reset` (every session signed out, API tokens revoked, a notice queued); `invalid_password`;
 *   `invalid_token` when the token is unknown, expired or already used.
 * @throws database errors and unexpected better-auth errors.
 */
export async function resetPassword(input: { token: string; newPassword: string }): Promise<ResetPasswordResult> {
  if (!newPasswordField.safeParse(input.newPassword).success) return { kind: "invalid_password" };
  if (input.token.length === 0 || input.token.length > 200) return { kind: "invalid_token" };
  try {
    await auth().api.resetPassword({ body: { token: input.token, newPassword: input.newPassword } });
    return { kind: "reset" };
  } catch (error) {
    if (!isAPIError(error)) throw error;
    const code = error.body?.code ?? "";
    if (code === "INVALID_TOKEN" || code === "USER_NOT_FOUND") return { kind: "invalid_token" };
    if (code === "PASSWORD_TOO_SHORT" || code === "PASSWORD_TOO_LONG") return { kind: "invalid_password" };
    throw error;
  }
}

/**
 * Whether `userId` has confirmed its address (better-auth's `emailVerified`).
 * @throws database errors.
 */
export async function isAddressConfirmed(userId: string): Promise<boolean> {
  const { rows } = await pool().query<{ verified: boolean }>(
    `SELECT "emailVerified" AS verified FROM "user" WHERE id = $1`,
    [userId],
  );
  return rows[0]?.verified === true;
}

/**
 * Sends the address check again (better-auth's `sendVerificationEmail`; throttled like "forgot password").
 * @returns `requested`, or `throttled` with the seconds to wait.
 * @throws database errors and unexpected better-auth errors.
 */
export async function sendAddressCheckAgain(
  email: string,
  requestHeaders: Headers,
): Promise<RequestPasswordResetResult> {
  try {
    await auth().api.sendVerificationEmail({
      body: { email, callbackURL: ADDRESS_CONFIRMED_PATH },
      headers: requestHeaders,
    });
  } catch (error) {
    if (!isAPIError(error)) throw error;
    if (error.statusCode === 429) return { kind: "throttled", retryAfterS: retryAfterFrom(error) };
    throw error;
  }
  return { kind: "requested" };
}
