import { retryingPool } from "../db";
import type { Principal } from "../auth/principal";
import { prepared } from "../ledger";
import { API_TOKEN_PATTERN, hashApiToken } from "./create-api-token";
import { coalesceFreshReads } from "./fresh-reads";

// Named (prepared once per connection): every API request runs it. Its plan is a unique-index lookup of the hash
// and a primary-key lookup of the owner.
const PRINCIPAL_BY_TOKEN_SQL = `
SELECT t.user_id, u.email, u.role
  FROM api_tokens t
  JOIN "user" u ON u.id = t.user_id
 WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())`;

interface PrincipalRow {
  user_id: string;
  email: string;
  role: string;
}

/**
 * The token's row by its hash. Concurrent lookups of one hash share a query, but only one sent after each of them
 * started (./fresh-reads.ts): a duplicate storm's 1000 requests with one token cost two or three SELECTs, and a
 * request that starts after a revocation committed never gets an answer read before it.
 */
const principalRowByHash = coalesceFreshReads(async (tokenHash: string): Promise<PrincipalRow | null> => {
  const { rows } = await retryingPool().query<PrincipalRow>(
    prepared("api_token_principal", PRINCIPAL_BY_TOKEN_SQL, [tokenHash]),
  );
  return rows[0] ?? null;
});

/**
 * Resolves a personal API token to the principal it acts for (contract section 4).
 *
 * One SELECT through the unique index on `token_hash`, joined to the owner's current email and role, and no
 * write of any kind (no "last used" column on purpose): checking a token costs about 1 ms and never contends
 * with other requests (docs/development.md note 18). A revoked or expired token stops working on the next request:
 * concurrent checks of one token share a SELECT only when it was sent after each of them started.
 * The token is compared by its SHA-256 (the unique index), never as text: the secret itself is never stored, and
 * timing differences of the index lookup can only reveal something about a hash nobody can invert.
 *
 * @param token the text after `Bearer ` exactly as sent.
 * @returns the principal (`via: "token"`), or null when the token is malformed, unknown, revoked or expired.
 * @throws the pg driver's error when the database is unreachable for longer than DB_FAILOVER_RETRY_MS (a read,
 *   retried through a failover like the ledger's statements: lib/db.ts `retryingPool`).
 */
export async function findPrincipalByToken(token: string): Promise<Principal | null> {
  // A malformed token cannot match any stored hash: skip the query.
  if (!API_TOKEN_PATTERN.test(token)) return null;
  const row = await principalRowByHash(hashApiToken(token));
  if (!row) return null;
  // Only the exact string 'admin' grants admin rights; the column's CHECK allows nothing but 'user' | 'admin'.
  return { userId: row.user_id, email: row.email, role: row.role === "admin" ? "admin" : "user", via: "token" };
}
