import { pool } from "../db";

/** A token as the owner may see it: never the secret or its hash. */
export interface ApiTokenSummary {
  id: string;
  name: string;
  /** Display form: `wlt_` + the first 8 characters of the secret. */
  prefix: string;
  createdAt: Date;
  /** null while the token has not been revoked. */
  revokedAt: Date | null;
  /** null for a token that never expires. */
  expiresAt: Date | null;
}

interface TokenRow {
  id: string;
  name: string;
  prefix: string;
  created_at: Date;
  revoked_at: Date | null;
  expires_at: Date | null;
}

const COLUMNS = "id, name, prefix, created_at, revoked_at, expires_at";
const ACTIVE = "revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())";

function toSummary(r: TokenRow): ApiTokenSummary {
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
    expiresAt: r.expires_at,
  };
}

/**
 * Most active tokens listed: TOKENS_PER_USER_MAX's upper bound (lib/env.ts), so every active token is always on
 * the page and revocable (contract section 9), even if the cap was lowered after tokens were made.
 */
const ACTIVE_LIST_MAX = 1000;

/** Inactive tokens per page: 50 rows keep the page short; older ones are a click away. */
const INACTIVE_PAGE_SIZE = 50;

/**
 * Lists a user's personal API tokens in two parts: every active token (not revoked, not expired), newest first;
 * and one page of the others (revoked or expired), newest first, continuing after `inactiveAfterId`.
 *
 * @param userId the owner's `"user".id` from the authenticated session.
 * @param options.inactiveAfterId the last inactive token id of the previous page (a UUID the caller validated);
 *   an id that is not one of this user's inactive tokens gives an empty page.
 * @returns `{ active, inactive, nextInactiveAfterId }` (null on the last page), without any secret material.
 * @throws the pg driver's error on database failure.
 */
export async function listApiTokens(
  userId: string,
  options: { inactiveAfterId?: string | undefined } = {},
): Promise<{ active: ApiTokenSummary[]; inactive: ApiTokenSummary[]; nextInactiveAfterId: string | null }> {
  const active = await pool().query<TokenRow>(
    `SELECT ${COLUMNS} FROM api_tokens WHERE user_id = $1 AND ${ACTIVE}
      ORDER BY created_at DESC, id DESC LIMIT $2`,
    [userId, ACTIVE_LIST_MAX],
  );
  // Keyset page over (created_at, id), newest first: stable while tokens are added or revoked.
  const after = options.inactiveAfterId ?? null;
  const inactive = await pool().query<TokenRow>(
    `SELECT ${COLUMNS} FROM api_tokens t
      WHERE user_id = $1 AND NOT (${ACTIVE})
        AND ($2::text IS NULL OR (created_at, id) < (
          SELECT created_at, id FROM api_tokens WHERE id = $2 AND user_id = $1 AND NOT (${ACTIVE})))
      ORDER BY created_at DESC, id DESC LIMIT $3`,
    [userId, after, INACTIVE_PAGE_SIZE + 1],
  );
  const page = inactive.rows.slice(0, INACTIVE_PAGE_SIZE).map(toSummary);
  const more = inactive.rows.length > INACTIVE_PAGE_SIZE;
  return {
    active: active.rows.map(toSummary),
    inactive: page,
    nextInactiveAfterId: more ? (page[page.length - 1]?.id ?? null) : null,
  };
}
