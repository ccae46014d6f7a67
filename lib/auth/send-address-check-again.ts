/** Sign-up's address check, sent again on request (docs/decisions/054-mail-outbox.md). */
import { isAPIError } from "better-auth/api";
import { ADDRESS_CONFIRMED_PATH } from "../mail/account-mail";
import { auth } from "./auth";
import type { MailRequestResult } from "./request-password-reset";
import { retryAfterFrom } from "./sign-in-with-password";

/**
 * Sends the address check again (better-auth's `sendVerificationEmail`; throttled like "forgot password").
 * @returns `requested`, or `throttled` with the seconds to wait.
 * @throws database errors and unexpected better-auth errors.
 */
export async function sendAddressCheckAgain(email: string, requestHeaders: Headers): Promise<MailRequestResult> {
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
