/**
 * Personal API tokens (contract section 4): 32 random bytes, shown to the user once, stored only as their
 * SHA-256. Not better-auth's api-key plugin, which writes to the database on every check and limits
 * verifications per day (stack-notes 18).
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { pool } from "../db";

/** Every token starts with this, so a leaked token is recognisable (secret scanners, logs). */
export const API_TOKEN_PREFIX = "wlt_";

/** 32 bytes = 256 bits of entropy: guessing is hopeless, and the SHA-256 of it needs no salt or stretching. */
const API_TOKEN_SECRET_BYTES = 32;

/** base64url of 32 bytes without padding is 43 characters. */
const API_TOKEN_SECRET_CHARS = 43;

/**
 * Characters of the secret kept in clear (after the prefix) so the user can tell tokens apart. 8 characters
 * reveal 48 of the 256 bits; the remaining 208 bits keep the token unguessable.
 */
const DISPLAY_PREFIX_CHARS = 8;

/** Longest token name, in characters (the column's CHECK: 1..100). */
export const API_TOKEN_NAME_MAX_LENGTH = 100;

/** What a well-formed token looks like; anything else is refused before touching the database. */
export const API_TOKEN_PATTERN = new RegExp(`^${API_TOKEN_PREFIX}[A-Za-z0-9_-]{${API_TOKEN_SECRET_CHARS}}$`);

/** The stored form of a token: lowercase hex SHA-256 of its full text (prefix included), 64 characters. */
export function hashApiToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/**
 * Creates a personal API token for a user.
 *
 * @param input.userId the owner's `"user".id` (from the authenticated session, never from a request body).
 * @param input.name a label of 1..100 characters after trimming, chosen by the user.
 * @returns `{ token, id, prefix }`: `token` is the only copy of the secret (`wlt_` + 43 base64url characters)
 *   and must be shown once and never logged or stored; `id` identifies the row (for revocation); `prefix` is
 *   the display form kept in the database (`wlt_` + 8 characters).
 * @throws RangeError when the name is empty or too long (callers validate first); the pg driver's error on
 *   database failure, including a foreign-key violation (23503) when the user does not exist.
 */
export async function createApiToken(input: {
  userId: string;
  name: string;
}): Promise<{ token: string; id: string; prefix: string }> {
  const name = input.name.trim();
  if (name.length < 1 || name.length > API_TOKEN_NAME_MAX_LENGTH) {
    throw new RangeError(`API token name must be 1..${API_TOKEN_NAME_MAX_LENGTH} characters`);
  }
  const token = API_TOKEN_PREFIX + randomBytes(API_TOKEN_SECRET_BYTES).toString("base64url");
  const prefix = token.slice(0, API_TOKEN_PREFIX.length + DISPLAY_PREFIX_CHARS);
  const id = randomUUID();
  await pool().query(`INSERT INTO api_tokens (id, user_id, name, prefix, token_hash) VALUES ($1, $2, $3, $4, $5)`, [
    id,
    input.userId,
    name,
    prefix,
    hashApiToken(token),
  ]);
  return { token, id, prefix };
}
