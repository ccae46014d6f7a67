import { isAPIError } from "better-auth/api";
import { clientAddressFrom } from "../http/client-address";
import { beginPasswordAttempt, finishPasswordAttempt } from "../limits/auth-throttles";
import { revokeAllApiTokens } from "../api-tokens/revoke-api-token";
import { queuePasswordChanged } from "../mail/account-mail";
import { auth } from "./auth";
import { newPasswordField, signInPasswordField } from "./credential-fields";
import { listLiveSessionTokens } from "./list-live-session-tokens";
import { recordEndedSessions } from "./record-ended-sessions";

export type ChangePasswordResult =
  | { kind: "changed"; apiTokensRevoked: number }
  | { kind: "wrong_password" }
  | { kind: "invalid_password" }
  | { kind: "throttled"; retryAfterS: number };

/**
 * Changes the signed-in user's password (contract section 9).
 *
 * The current password is a password guess like a sign-in: it counts against the same failed-attempt limits
 * for the account's email and the client's address (lib/limits/auth-throttles.ts). On success every other
 * session of the user is revoked (better-auth's `revokeOtherSessions`; this browser gets a fresh session
 * cookie through `nextCookies()`), and every API token too unless `keepApiTokens`. The ended sessions are recorded
 * (lib/auth/record-ended-sessions.ts), so the other browsers' sign-in page says the password was changed elsewhere
 * (docs/decisions/056), and the owner is mailed a notice (docs/decisions/054-mail-outbox.md).
 *
 * @param input.userId, input.email the signed-in user, from the session (never from the form).
 * @param input.currentPassword as typed; input.newPassword 10..128 characters.
 * @param input.keepApiTokens true to keep the user's API tokens working (the form's checkbox, off by default:
 *   contract section 9).
 * @param requestHeaders the request's headers (`await headers()` in a server action): session cookie, address.
 * @returns `changed` with the number of tokens revoked; `wrong_password`; `invalid_password` for a new password
 *   outside 10..128; `throttled` with the seconds to wait.
 * @throws other better-auth errors (no session: the caller checked) and database errors.
 */
export async function changePassword(
  input: { userId: string; email: string; currentPassword: string; newPassword: string; keepApiTokens: boolean },
  requestHeaders: Headers,
): Promise<ChangePasswordResult> {
  if (!newPasswordField.safeParse(input.newPassword).success) return { kind: "invalid_password" };
  // A current password over 128 characters cannot be right (and would make better-auth throw).
  if (!signInPasswordField.safeParse(input.currentPassword).success) return { kind: "wrong_password" };
  const address = clientAddressFrom(requestHeaders);
  let attempt = null;
  if (address !== null) {
    const decision = await beginPasswordAttempt(input.email, address);
    if (!decision.allowed) return { kind: "throttled", retryAfterS: decision.retryAfterS };
    attempt = decision.attempt;
  }
  // Read before the change, which deletes their rows; recorded only once the change is done.
  const endingTokens = await listLiveSessionTokens(input.userId);
  try {
    await auth().api.changePassword({
      body: { currentPassword: input.currentPassword, newPassword: input.newPassword, revokeOtherSessions: true },
      headers: requestHeaders,
    });
  } catch (error) {
    if (!isAPIError(error)) throw error;
    const code = error.body?.code ?? "";
    if (code === "INVALID_PASSWORD" && error.statusCode === 400) {
      if (attempt) await finishPasswordAttempt(attempt, false);
      return { kind: "wrong_password" };
    }
    throw error;
  }
  if (attempt) await finishPasswordAttempt(attempt, true);
  await recordEndedSessions({ userId: input.userId, tokens: endingTokens, reason: "password_changed" });
  const apiTokensRevoked = input.keepApiTokens ? 0 : await revokeAllApiTokens(input.userId);
  await queuePasswordChanged(input.userId, "changed");
  return { kind: "changed", apiTokensRevoked };
}

/**
 * "Sign out everywhere" (contract section 9): revokes every session of the signed-in user, this browser's
 * included (its cookie is cleared through `nextCookies()`), and every API token unless `keepApiTokens`.
 *
 * @param input.userId the signed-in user, from the session.
 * @param input.keepApiTokens true to keep the API tokens working (the form's checkbox, off by default).
 * @param requestHeaders the request's headers (`await headers()` in a server action).
 * @returns the number of tokens revoked.
 * @throws better-auth's error without a session; database errors.
 */
export async function signOutEverywhere(
  input: { userId: string; keepApiTokens: boolean },
  requestHeaders: Headers,
): Promise<{ apiTokensRevoked: number }> {
  const apiTokensRevoked = input.keepApiTokens ? 0 : await revokeAllApiTokens(input.userId);
  await auth().api.revokeSessions({ headers: requestHeaders });
  // The session row is gone; this only clears the cookie on this response.
  await auth().api.signOut({ headers: requestHeaders });
  return { apiTokensRevoked };
}
