/**
 * Personal API tokens (contract section 4): 32 random bytes, shown to the user once, stored only as their
 * SHA-256. Not better-auth's api-key plugin, which writes to the database on every check and limits
 * verifications per day (docs/development.md note 18).
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { z } from "zod";
import { withTransaction } from "../db";
import { env } from "../env";
import { isPlainLine } from "../http/plain-text";

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

/**
 * A token's name as every door takes it: surrounding spaces removed, 1..100 characters, none of them a control
 * character (lib/http/plain-text.ts: PostgreSQL refuses `\u0000`, case C31). The tokens page parses its field with
 * this; {@link createApiToken} checks the same rule again.
 */
export const apiTokenNameField = z.string().trim().min(1).max(API_TOKEN_NAME_MAX_LENGTH).refine(isPlainLine);

/** What a well-formed token looks like; anything else is refused before touching the database. */
export const API_TOKEN_PATTERN = new RegExp(`^${API_TOKEN_PREFIX}[A-Za-z0-9_-]{${API_TOKEN_SECRET_CHARS}}$`);

/** The stored form of a token: lowercase hex SHA-256 of its full text (prefix included), 64 characters. */
export function hashApiToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** Expiry choices offered by the tokens page, in days; null is "never". */
export const API_TOKEN_EXPIRY_DAYS = [7, 30, 90, 365] as const;
export type ApiTokenExpiryDays = (typeof API_TOKEN_EXPIRY_DAYS)[number] | null;

export type CreateApiTokenResult =
  | { kind: "created"; token: string; id: string; prefix: string; expiresAt: Date | null }
  /** The user already has TOKENS_PER_USER_MAX active tokens (contract section 9: 409 token_limit_reached). */
  | { kind: "limit_reached"; activeMax: number };

/**
 * Creates a personal API token for a user, unless the user already holds TOKENS_PER_USER_MAX active ones
 * (not revoked, not expired).
 *
 * The count and the insert run in one transaction that first locks the user's row (`FOR NO KEY UPDATE`), so
 * concurrent creations for one user are serialised and cannot pass the count together; other users are not
 * blocked.
 *
 * @param input.userId the owner's `"user".id` (from the authenticated session, never from a request body).
 * @param input.name a label of 1..100 characters after trimming, without control characters, chosen by the user
 *   ({@link apiTokenNameField}).
 * @param input.expiresInDays one of {@link API_TOKEN_EXPIRY_DAYS}, or null / absent for a token that never expires.
 * @returns `created` with `token`, the only copy of the secret (`wlt_` + 43 base64url characters: show it once,
 *   never log or store it), `id` (for revocation), `prefix` (the display form, `wlt_` + 8 characters) and
 *   `expiresAt`; or `limit_reached`.
 * @throws RangeError when the name breaks {@link apiTokenNameField} or the expiry is not offered (callers validate
 *   first; nothing reaches the database);
 *   Error when the user does not exist; the pg driver's error on database failure.
 */
export async function createApiToken(input: {
  userId: string;
  name: string;
  expiresInDays?: ApiTokenExpiryDays;
}): Promise<CreateApiTokenResult> {
  const checked = apiTokenNameField.safeParse(input.name);
  if (!checked.success) {
    throw new RangeError(
      `API token name must be 1..${API_TOKEN_NAME_MAX_LENGTH} characters without control characters`,
    );
  }
  const name = checked.data;
  const expiresInDays = input.expiresInDays ?? null;
  if (expiresInDays !== null && !API_TOKEN_EXPIRY_DAYS.includes(expiresInDays)) {
    throw new RangeError(`API token expiry must be one of ${API_TOKEN_EXPIRY_DAYS.join(", ")} days, or none`);
  }
  const activeMax = env().TOKENS_PER_USER_MAX;
  const token = API_TOKEN_PREFIX + randomBytes(API_TOKEN_SECRET_BYTES).toString("base64url");
  const prefix = token.slice(0, API_TOKEN_PREFIX.length + DISPLAY_PREFIX_CHARS);
  const id = randomUUID();
  return await withTransaction(async (client): Promise<CreateApiTokenResult> => {
    // The lock that serialises one user's creations; no row means the user does not exist.
    const owner = await client.query(`SELECT 1 FROM "user" WHERE id = $1 FOR NO KEY UPDATE`, [input.userId]);
    if (owner.rowCount === 0) throw new Error(`createApiToken: no user ${input.userId}`);
    const active = await client.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM api_tokens
        WHERE user_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [input.userId],
    );
    if ((active.rows[0]?.count ?? 0) >= activeMax) return { kind: "limit_reached", activeMax };
    const inserted = await client.query<{ expires_at: Date | null }>(
      `INSERT INTO api_tokens (id, user_id, name, prefix, token_hash, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + $6::int * interval '1 day')
       RETURNING expires_at`,
      [id, input.userId, name, prefix, hashApiToken(token), expiresInDays],
    );
    return { kind: "created", token, id, prefix, expiresAt: inserted.rows[0]?.expires_at ?? null };
  });
}

/**
 * {@link createApiToken} for scripts and tests, which never expect the cap: the created token's fields.
 *
 * @throws Error when the user already holds TOKENS_PER_USER_MAX active tokens; otherwise as createApiToken.
 */
export async function createApiTokenOrThrow(
  input: Parameters<typeof createApiToken>[0],
): Promise<{ token: string; id: string; prefix: string; expiresAt: Date | null }> {
  const created = await createApiToken(input);
  if (created.kind === "limit_reached") {
    throw new Error(`user ${input.userId} already has ${created.activeMax} active API tokens`);
  }
  const { kind: _kind, ...token } = created;
  return token;
}
