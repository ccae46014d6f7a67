/**
 * Users for the HTTP benchmarks: rows in "user", personal API tokens and funded wallets, written straight into the
 * app's database in three statements (creating 1000 users through the API would measure sign-up, not the wallet).
 */
import { randomBytes } from "node:crypto";
import type pg from "pg";
import { API_TOKEN_PREFIX, hashApiToken } from "../lib/api-tokens/create-api-token";

export interface HttpUser {
  readonly id: string;
  /** The bearer token, in clear (only its SHA-256 is stored, as lib/api-tokens does). */
  readonly token: string;
}

/**
 * Balance given to each user, minor units: 10^12 covers a billion 1-unit payments, far more than a run makes, and
 * stays below the 2^53 CHECK. Funding is written directly, so the benchmark database does not satisfy the audit's
 * balance invariant; it is thrown away after the run.
 */
const FUNDING_MINOR = 1_000_000_000_000;

/**
 * Creates `count` users `bench_<tag>_<i>` with one API token each (the token format of
 * lib/api-tokens/create-api-token.ts: prefix + 32 random bytes in base64url) and a funded wallet.
 * Returns them in order. Throws on any database error.
 */
export async function createHttpUsers(db: pg.Pool, count: number, tag: string): Promise<HttpUser[]> {
  const users: HttpUser[] = Array.from({ length: count }, (_, index) => ({
    id: `bench_${tag}_${index}`,
    token: API_TOKEN_PREFIX + randomBytes(32).toString("base64url"),
  }));
  await db.query(
    `INSERT INTO "user" ("id", "name", "email") SELECT id, 'Bench user', id || '@bench.test' FROM unnest($1::text[]) AS id`,
    [users.map((user) => user.id)],
  );
  await db.query(
    `INSERT INTO api_tokens (id, user_id, name, prefix, token_hash)
     SELECT gen_random_uuid()::text, user_id, 'bench', left(token, 12), token_hash
       FROM unnest($1::text[], $2::text[], $3::text[]) AS t (user_id, token, token_hash)`,
    [users.map((user) => user.id), users.map((user) => user.token), users.map((user) => hashApiToken(user.token))],
  );
  await db.query(
    `INSERT INTO wallets (user_id, balance_minor, currency) SELECT id, $2, 'USD' FROM unnest($1::text[]) AS id`,
    [users.map((user) => user.id), FUNDING_MINOR],
  );
  return users;
}
