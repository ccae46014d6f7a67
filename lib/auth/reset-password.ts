/**
 * A reset link's new password (docs/decisions/054-mail-outbox.md), through better-auth's own flow: the token sets a
 * new password once, signs every session out, revokes the API tokens and mails a notice (lib/auth/auth.ts
 * `onPasswordReset`).
 */
import { isAPIError } from "better-auth/api";
import { auth } from "./auth";
import { newPasswordField } from "./credential-fields";

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
