import { pool } from "../db";

export type RevokeApiTokenResult = { kind: "revoked"; revokedAt: Date } | { kind: "not_found" };

/**
 * Revokes one of a user's personal API tokens; it stops authenticating on the next request.
 *
 * @param input.userId the owner's `"user".id` from the authenticated session (a token of another user is
 *   treated exactly like a token that does not exist).
 * @param input.tokenId the token's `api_tokens.id`.
 * @returns `{ kind: "revoked", revokedAt }` when this call revoked it; `{ kind: "not_found" }` when the user has
 *   no active token with that id (unknown, someone else's, or already revoked: revoking twice changes nothing).
 * @throws the pg driver's error on database failure.
 */
export async function revokeApiToken(input: { userId: string; tokenId: string }): Promise<RevokeApiTokenResult> {
  // `revoked_at IS NULL` makes the update happen once: a second revoke matches no row and keeps the first time.
  const { rows } = await pool().query<{ revoked_at: Date }>(
    `UPDATE api_tokens SET revoked_at = now()
      WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL
      RETURNING revoked_at`,
    [input.tokenId, input.userId],
  );
  const row = rows[0];
  return row ? { kind: "revoked", revokedAt: row.revoked_at } : { kind: "not_found" };
}

/**
 * Revokes every active token of a user (a password change or "sign out everywhere" without "keep my API
 * tokens", contract section 9).
 *
 * @param userId the owner's `"user".id` from the authenticated session.
 * @returns how many tokens this call revoked.
 * @throws the pg driver's error on database failure.
 */
export async function revokeAllApiTokens(userId: string): Promise<number> {
  const { rowCount } = await pool().query(
    `UPDATE api_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`,
    [userId],
  );
  return rowCount ?? 0;
}
