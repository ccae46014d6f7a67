/**
 * zod schemas for the fields people type to sign up or sign in, shared by the pages, `npm run users` and
 * better-auth's own endpoints (its `hooks.before` in ./auth.ts calls {@link accountFieldsProblem}), so every door
 * that creates or changes an account applies the same rules (contract section 9: email at most 254 characters,
 * name at most 100, password 10..128).
 */
import { z } from "zod";
import { isPlainLine } from "../http/plain-text";

/** Shortest password accepted at sign-up, in characters (project rule; NIST SP 800-63B asks for at least 8). */
export const PASSWORD_MIN_LENGTH = 10;
/**
 * Longest password accepted, in characters. 128 is better-auth's default and bounds the work one request can
 * make the hash do; NIST SP 800-63B asks for at least 64.
 */
export const PASSWORD_MAX_LENGTH = 128;

/**
 * Longest email address accepted, in characters: 254 is the most that fits in an SMTP forward path
 * (RFC 5321 section 4.5.3.1.3, 256 octets including the angle brackets).
 */
const EMAIL_MAX_LENGTH = 254;

/** An email address: surrounding spaces removed, lowercased (better-auth stores it lowercased), at most 254. */
export const emailField = z.string().trim().toLowerCase().pipe(z.email().max(EMAIL_MAX_LENGTH));

/** A password for a new account: 10..128 characters, taken exactly as typed (never trimmed). */
export const newPasswordField = z.string().min(PASSWORD_MIN_LENGTH).max(PASSWORD_MAX_LENGTH);

/**
 * A password offered at sign-in: 1..128 characters. The minimum is not checked here, so a too-short guess
 * gets the same "wrong email or password" answer as any other wrong one.
 */
export const signInPasswordField = z.string().min(1).max(PASSWORD_MAX_LENGTH);

/** Longest display name, in characters (contract section 9). */
export const NAME_MAX_LENGTH = 100;

/**
 * A display name: surrounding spaces removed, 1..100 characters, none of them a control character (PostgreSQL
 * refuses `\u0000` in text, so without this rule such a name failed in the INSERT with a 500: case C31).
 */
const nameField = z.string().trim().min(1).max(NAME_MAX_LENGTH).refine(isPlainLine);

/**
 * A profile picture's address, which better-auth's sign-up stores as it comes (the product never shows one): any
 * text without control characters, for the same reason as the name. Its length is bounded by BODY_LIMIT_BYTES.
 */
const imageField = z.string().refine(isPlainLine);

/** What the hook refuses an account change with: better-auth's error code and a sentence. */
export interface AccountFieldsProblem {
  readonly code: "INVALID_EMAIL" | "INVALID_NEW_PASSWORD" | "INVALID_NAME" | "INVALID_IMAGE";
  readonly message: string;
}

const passwordRule = `Use a password of ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters.`;

/**
 * Checks the account fields of a better-auth endpoint's body, whichever door called it (HTTP or `auth.api.*`).
 *
 * @param path the endpoint's path (`/sign-up/email`, `/update-user`, `/change-password`, ...).
 * @param body the endpoint's body as received (unknown shape).
 * @returns null when the endpoint changes no account field or every field is valid; otherwise the problem.
 *   Fields absent from the body are left to the endpoint's own schema.
 */
export function accountFieldsProblem(path: string, body: unknown): AccountFieldsProblem | null {
  const fields = typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {};
  const checks: Array<[keyof typeof fields, z.ZodType, AccountFieldsProblem]> = [];
  const email: AccountFieldsProblem = {
    code: "INVALID_EMAIL",
    message: `Enter an email address of at most ${EMAIL_MAX_LENGTH} characters.`,
  };
  const name: AccountFieldsProblem = {
    code: "INVALID_NAME",
    message: `Use a name of 1 to ${NAME_MAX_LENGTH} characters, without line breaks or other control characters.`,
  };
  const image: AccountFieldsProblem = {
    code: "INVALID_IMAGE",
    message: "Use a picture address without line breaks or other control characters.",
  };
  const password: AccountFieldsProblem = { code: "INVALID_NEW_PASSWORD", message: passwordRule };
  if (path === "/sign-up/email") {
    checks.push(
      ["email", emailField, email],
      ["name", nameField, name],
      ["image", imageField, image],
      ["password", newPasswordField, password],
    );
  } else if (path === "/update-user") {
    checks.push(["name", nameField, name], ["image", imageField, image]);
  } else if (path === "/change-password" || path === "/set-password" || path === "/reset-password") {
    checks.push(["newPassword", newPasswordField, password]);
  } else if (path === "/change-email") {
    checks.push(["newEmail", emailField, email]);
  }
  for (const [field, schema, problem] of checks) {
    if (fields[field] === undefined) continue;
    if (!schema.safeParse(fields[field]).success) return problem;
  }
  return null;
}
