/**
 * Per-email throttle for password sign-in (stack-notes 18): better-auth's own limiter only sees HTTP requests
 * to `/api/auth/*` and keys on the client IP, which a client can choose (`X-Forwarded-For` is taken as sent when
 * no proxy is configured). A server action calling `auth.api.signInEmail()` is not limited at all. This throttle
 * runs inside better-auth's `hooks.before`, so it covers both doors, and it keys on the email being guessed.
 *
 * Counters live in better-auth's own `"rateLimit"` table (key namespace `sign-in-email:`), so every app process
 * shares them and they survive restarts. One atomic upsert per attempt: no read-then-write race.
 */
import { createHash, randomUUID } from "node:crypto";
import { pool } from "../db";

/**
 * Length of one throttle window. 60 s is also the longest window better-auth itself uses (its
 * password-reset rule), and better-auth prunes `"rateLimit"` rows whose `lastRequest` is older than its
 * longest window: with a longer window here, a pruned row would silently reset our counter early.
 */
export const SIGN_IN_WINDOW_MS = 60_000;

/**
 * Attempts allowed per email per window. 5 lets a person who mistypes try several times, while an online
 * guesser gets at most 7,200 guesses a day per account against passwords of at least 10 characters
 * (OWASP Authentication Cheat Sheet: throttle per account, not only per IP). A successful sign-in clears the
 * counter, so someone who signs in often is never throttled.
 */
export const SIGN_IN_MAX_ATTEMPTS = 5;

const KEY_PREFIX = "sign-in-email:";

export type SignInAttemptDecision = { allowed: true } | { allowed: false; retryAfterS: number };

/**
 * The counter's key for an email: case-folded and trimmed the way better-auth folds it before its lookup,
 * then hashed so the table holds no readable addresses.
 */
function throttleKey(email: string): string {
  const normalized = email.trim().toLowerCase();
  return KEY_PREFIX + createHash("sha256").update(normalized, "utf8").digest("hex");
}

/**
 * Records one sign-in attempt for `email` and decides whether it may proceed.
 *
 * @param email the address as submitted (any case; surrounding spaces ignored).
 * @param nowMs the current time in Unix milliseconds (a parameter so tests can move the clock).
 * @returns `{ allowed: true }` for the first {@link SIGN_IN_MAX_ATTEMPTS} attempts in a window of
 *   {@link SIGN_IN_WINDOW_MS}; otherwise `{ allowed: false, retryAfterS }` with the whole seconds until the
 *   window ends. The window starts at the first attempt after the previous one ended (a fixed window).
 * @throws the pg driver's error when the database is unreachable (sign-in then fails closed).
 */
export async function consumeSignInAttempt(email: string, nowMs: number = Date.now()): Promise<SignInAttemptDecision> {
  // Both CASEs read the row's values from before this statement, so a window that has ended restarts at 1
  // with a new start, and one still open counts up. Concurrent attempts serialise on the unique key index.
  const { rows } = await pool().query<{ count: number; lastRequest: number }>(
    `INSERT INTO "rateLimit" ("id", "key", "count", "lastRequest")
     VALUES ($1, $2, 1, $3)
     ON CONFLICT ("key") DO UPDATE SET
       "count" = CASE WHEN "rateLimit"."lastRequest" <= $3 - $4 THEN 1 ELSE "rateLimit"."count" + 1 END,
       "lastRequest" = CASE WHEN "rateLimit"."lastRequest" <= $3 - $4 THEN $3 ELSE "rateLimit"."lastRequest" END
     RETURNING "count", "lastRequest"`,
    [randomUUID(), throttleKey(email), nowMs, SIGN_IN_WINDOW_MS],
  );
  const row = rows[0];
  if (!row) throw new Error("rateLimit upsert returned no row");
  if (row.count <= SIGN_IN_MAX_ATTEMPTS) return { allowed: true };
  const windowEndMs = Number(row.lastRequest) + SIGN_IN_WINDOW_MS;
  return { allowed: false, retryAfterS: Math.max(1, Math.ceil((windowEndMs - nowMs) / 1000)) };
}

/**
 * Forgets the attempts recorded for `email` (called after a successful sign-in).
 *
 * @param email the address as submitted.
 * @throws the pg driver's error when the database is unreachable.
 */
export async function clearSignInAttempts(email: string): Promise<void> {
  await pool().query(`DELETE FROM "rateLimit" WHERE "key" = $1`, [throttleKey(email)]);
}
