import { pool } from "../db";

/** A token as the owner may see it: never the secret or its hash. */
export interface ApiTokenSummary {
  id: string;
  name: string;
  /** Display form: `wlt_` + the first 8 characters of the secret. */
  prefix: string;
  createdAt: Date;
  /** null while the token works. */
  revokedAt: Date | null;
}

/**
 * Most tokens listed, newest first. 200 is far above what a person manages by hand, and bounds the page.
 */
const LIST_LIMIT = 200;

/**
 * Lists a user's personal API tokens, active and revoked, newest first (at most 200).
 *
 * @param userId the owner's `"user".id` from the authenticated session.
 * @returns summaries without any secret material.
 * @throws the pg driver's error on database failure.
 */
export async function listApiTokens(userId: string): Promise<ApiTokenSummary[]> {
  const { rows } = await pool().query<{
    id: string;
    name: string;
    prefix: string;
    created_at: Date;
    revoked_at: Date | null;
  }>(
    `SELECT id, name, prefix, created_at, revoked_at
       FROM api_tokens
      WHERE user_id = $1
      ORDER BY created_at DESC, id DESC
      LIMIT $2`,
    [userId, LIST_LIMIT],
  );
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  }));
}
