/**
 * zod schemas for the fields people type to sign up or sign in, shared by the pages and `npm run users`, so
 * every door applies the same rules as better-auth (./auth.ts).
 */
import { z } from "zod";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./auth";

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
