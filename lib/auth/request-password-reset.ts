/**
 * "Forgot password" (docs/decisions/054-mail-outbox.md), through better-auth's own flow: a request queues a
 * single-use link valid for an hour (lib/mail/account-mail.ts) when the address has an account, and answers the same
 * either way. The link's token then sets a new password once (./reset-password.ts).
 */
import { isAPIError } from "better-auth/api";
import { RESET_PASSWORD_PATH } from "../mail/account-mail";
import { auth } from "./auth";
import { retryAfterFrom } from "./sign-in-with-password";

/** How a request for mail ended (a reset link, or the address check again). */
export type MailRequestResult = { kind: "requested" } | { kind: "throttled"; retryAfterS: number };

/**
 * Asks for a reset link for `email`.
 * @param email the address as typed (a malformed one is answered like an unknown one).
 * @param requestHeaders the request's headers (client address for the throttle: 5 requests per hour per typed
 *   address, 20 per client address, lib/limits/auth-throttles.ts `countMailRequest`).
 * @returns `requested` whether or not the address has an account (the answer never tells); `throttled` with the
 *   seconds to wait.
 * @throws database errors and unexpected better-auth errors.
 */
export async function requestPasswordReset(email: string, requestHeaders: Headers): Promise<MailRequestResult> {
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
