/**
 * The account's messages, queued in the outbox (docs/decisions/054-mail-outbox.md): better-auth's address check and
 * password reset (lib/auth/auth.ts passes its callbacks here), the notice after a password change or reset, and the
 * notice of a sign-in from a new device. Each is queued once per event: the event key is the claim.
 */
import { createHash, randomUUID } from "node:crypto";
import { revokeAllApiTokens } from "../api-tokens/revoke-api-token";
import { pool } from "../db";
import { queueMail } from "./outbox";

/** How long an address check's link works, in hours (better-auth's `emailVerification.expiresIn`). */
export const ADDRESS_CHECK_VALID_HOURS = 24;
/** How long a password reset link works, in minutes (better-auth's `resetPasswordTokenExpiresIn`). */
export const PASSWORD_RESET_VALID_MINUTES = 60;

/** Where a confirmed address lands: the wallet, which then says the address is confirmed. */
export const ADDRESS_CONFIRMED_PATH = "/wallet?address=confirmed";
/** The page that sets a new password; better-auth's link redirects there with `?token=`. */
export const RESET_PASSWORD_PATH = "/reset-password";

/** A token's SHA-256, hex: event keys name a token without storing it. */
function tokenKey(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/**
 * Queues sign-up's address check (better-auth's `sendVerificationEmail`). The link is better-auth's, sent back to
 * {@link ADDRESS_CONFIRMED_PATH} after it confirms.
 * @param input.url better-auth's verification link; input.token its token (the event key holds only its hash).
 * @throws database errors (better-auth then answers 500: a sign-up whose check cannot be queued is not hidden).
 */
export async function queueAddressCheck(input: { userId: string; url: string; token: string }): Promise<void> {
  const url = new URL(input.url);
  url.searchParams.set("callbackURL", ADDRESS_CONFIRMED_PATH);
  await queueMail(pool(), {
    eventKey: `address-check:${tokenKey(input.token)}`,
    kind: "address_check",
    userId: input.userId,
    payload: { url: url.toString() },
  });
}

/**
 * Queues a password reset link (better-auth's `sendResetPassword`; called only for an address that has an account,
 * while the caller's answer is the same either way).
 * @throws database errors.
 */
export async function queuePasswordReset(input: { userId: string; url: string; token: string }): Promise<void> {
  await queueMail(pool(), {
    eventKey: `password-reset:${tokenKey(input.token)}`,
    kind: "password_reset",
    userId: input.userId,
    payload: { url: input.url },
  });
}

/**
 * Queues the notice that a password was changed (`how`) at this instant: one per change.
 * @throws database errors.
 */
export async function queuePasswordChanged(userId: string, how: "changed" | "reset"): Promise<void> {
  await queueMail(pool(), {
    eventKey: `password-${how}:${randomUUID()}`,
    kind: "password_changed",
    userId,
    payload: { how, at: new Date().toISOString() },
  });
}

/**
 * After a reset (better-auth's `onPasswordReset`, once the new password is stored and the sessions revoked): the
 * API tokens are revoked too (whoever reset the password may not be whoever made them) and the owner is told.
 * @throws database errors.
 */
export async function afterPasswordReset(userId: string): Promise<void> {
  await revokeAllApiTokens(userId);
  await queuePasswordChanged(userId, "reset");
}
