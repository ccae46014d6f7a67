/**
 * Accounts, sessions and personal API tokens against a real PostgreSQL.
 *
 * This file runs on its own database (created from the test stack's server and migrated in `beforeAll`,
 * dropped in `afterAll`), so the "no database write per token check" test can read PostgreSQL's per-table
 * write counters without other test files writing at the same time.
 */
import { createHash, randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { migrate } from "../../lib/migrate";
import { assertLocalDatabase } from "../../scripts/lib/stack";
import { closeDb, pool } from "../../lib/db";
import { env } from "../../lib/env";
import { auth } from "../../lib/auth/auth";
import { getPrincipal } from "../../lib/auth/principal";
import { signInWithPassword } from "../../lib/auth/sign-in-with-password";
import { createUser } from "../../lib/users/create-user";
import { API_TOKEN_PATTERN, createApiTokenOrThrow } from "../../lib/api-tokens/create-api-token";
import { findPrincipalByToken } from "../../lib/api-tokens/find-principal-by-token";
import { listApiTokens } from "../../lib/api-tokens/list-api-tokens";
import { revokeApiToken } from "../../lib/api-tokens/revoke-api-token";
import { waitFor } from "../helpers/wait";

const PASSWORD = "correct horse battery staple";

const sharedDatabaseUrl = process.env.DATABASE_URL;
const databaseName = `auth_test_${randomUUID().replaceAll("-", "")}`;
let privateDatabaseUrl = "";

function uniqueEmail(label: string): string {
  return `${label}-${randomUUID()}@example.test`;
}

/** Runs `sql` on a short-lived connection to `url` (not the app's pool, whose statistics are under test). */
async function queryOnce<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url, application_name: "auth-test-probe" });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

/** The SQL text of a `query()` call's first argument (a string, or a config object with `text`). */
function statementText(first: unknown): string {
  if (typeof first === "string") return first.trim();
  const text = (first as { text?: unknown } | null)?.text;
  return typeof text === "string" ? text.trim() : "";
}

/** Signs in through better-auth's server API and returns a `cookie` header carrying the new session. */
async function sessionCookieFor(email: string): Promise<string> {
  const { headers } = await auth().api.signInEmail({ body: { email, password: PASSWORD }, returnHeaders: true });
  const setCookie = headers.get("set-cookie");
  if (!setCookie) throw new Error("sign-in set no cookie");
  const pair = setCookie.split(";")[0];
  if (!pair) throw new Error("unparseable set-cookie");
  return pair;
}

beforeAll(async () => {
  if (!sharedDatabaseUrl) throw new Error("DATABASE_URL is not set: run under the vitest 'integration' project");
  assertLocalDatabase(sharedDatabaseUrl);
  await queryOnce(sharedDatabaseUrl, `CREATE DATABASE ${databaseName}`);
  const url = new URL(sharedDatabaseUrl);
  url.pathname = `/${databaseName}`;
  privateDatabaseUrl = url.toString();
  await migrate(privateDatabaseUrl);
  // lib/env.ts reads this on first use, which is after this point: the app's pool opens on the private database.
  process.env.DATABASE_URL = privateDatabaseUrl;
  expect(env().DATABASE_URL).toBe(privateDatabaseUrl);
});

afterAll(async () => {
  await closeDb();
  process.env.DATABASE_URL = sharedDatabaseUrl;
  if (sharedDatabaseUrl && privateDatabaseUrl) {
    await queryOnce(sharedDatabaseUrl, `DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`);
  }
});

describe("createUser", () => {
  it("creates a user whose password is stored as argon2id, with the email lowercased and role 'user'", async () => {
    const email = uniqueEmail("Create");
    const result = await createUser({ email, password: PASSWORD, role: "user" });
    expect(result.kind).toBe("created");
    if (result.kind !== "created") return;

    const users = await queryOnce<{ email: string; role: string }>(
      privateDatabaseUrl,
      `SELECT email, role FROM "user" WHERE id = $1`,
      [result.userId],
    );
    expect(users).toEqual([{ email: email.toLowerCase(), role: "user" }]);
    const accounts = await queryOnce<{ password: string; providerId: string }>(
      privateDatabaseUrl,
      `SELECT "password", "providerId" FROM "account" WHERE "userId" = $1`,
      [result.userId],
    );
    expect(accounts).toHaveLength(1);
    expect(accounts[0]?.providerId).toBe("credential");
    expect(accounts[0]?.password.startsWith("$argon2id$")).toBe(true);
    // OWASP's parameters (lib/auth/auth.ts): 19 MiB, 2 passes, 1 lane.
    expect(accounts[0]?.password).toContain("$m=19456,t=2,p=1$");
    // The session that sign-up opens is deleted: nobody holds its token.
    const sessions = await queryOnce(privateDatabaseUrl, `SELECT 1 FROM "session" WHERE "userId" = $1`, [
      result.userId,
    ]);
    expect(sessions).toHaveLength(0);
  });

  it("answers duplicate_email for an email that exists in any case, and changes nothing", async () => {
    const email = uniqueEmail("dup");
    const first = await createUser({ email, password: PASSWORD, role: "user" });
    expect(first.kind).toBe("created");
    const second = await createUser({ email: email.toUpperCase(), password: "another password 123", role: "admin" });
    expect(second).toEqual({ kind: "duplicate_email" });
    const users = await queryOnce<{ role: string }>(privateDatabaseUrl, `SELECT role FROM "user" WHERE email = $1`, [
      email.toLowerCase(),
    ]);
    expect(users).toEqual([{ role: "user" }]);
  });

  it("makes an admin when asked", async () => {
    const result = await createUser({ email: uniqueEmail("admin"), password: PASSWORD, role: "admin" });
    if (result.kind !== "created") throw new Error("expected created");
    const users = await queryOnce<{ role: string }>(privateDatabaseUrl, `SELECT role FROM "user" WHERE id = $1`, [
      result.userId,
    ]);
    expect(users).toEqual([{ role: "admin" }]);
  });

  it("creates exactly one account when the same email is created concurrently; the others get duplicate_email", async () => {
    const email = uniqueEmail("race");
    // better-auth logs the losers' unique violations as errors; they are expected here.
    const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      // 5 at once: enough for several to pass better-auth's "email free?" check before any insert commits.
      const results = await Promise.all(
        Array.from({ length: 5 }, () => createUser({ email, password: PASSWORD, role: "user" })),
      );
      expect(results.filter((r) => r.kind === "created")).toHaveLength(1);
      expect(results.filter((r) => r.kind === "duplicate_email")).toHaveLength(4);
    } finally {
      consoleError.mockRestore();
    }
    const users = await queryOnce(privateDatabaseUrl, `SELECT 1 FROM "user" WHERE email = $1`, [email.toLowerCase()]);
    expect(users).toHaveLength(1);
  });

  it("answers duplicate_email when another transaction commits the same email between better-auth's check and its insert", async () => {
    const email = uniqueEmail("staged-race").toLowerCase();
    const holder = new pg.Client({ connectionString: privateDatabaseUrl, application_name: "auth-test-holder" });
    await holder.connect();
    const consoleError = vi.spyOn(console, "error").mockImplementation(() => {});
    try {
      // An uncommitted row with the email: invisible to better-auth's "email free?" SELECT, but its INSERT must
      // wait on the unique index user_email_key until this transaction ends.
      await holder.query("BEGIN");
      await holder.query(`INSERT INTO "user" (id, name, email) VALUES ($1, 'holder', $2)`, [
        `holder_${randomUUID()}`,
        email,
      ]);
      const pending = createUser({ email, password: PASSWORD, role: "user" });
      // Wait (up to 10 s, 20 ms apart) until the app's INSERT is blocked on our transaction, instead of sleeping.
      await waitFor(
        () =>
          queryOnce(
            privateDatabaseUrl,
            `SELECT 1 FROM pg_stat_activity WHERE application_name = 'wallet-app' AND wait_event_type = 'Lock' AND query ILIKE 'insert into "user"%'`,
          ),
        (rows) => rows.length > 0,
        { what: "the app's INSERT to wait on our transaction" },
      );
      await holder.query("COMMIT");
      expect(await pending).toEqual({ kind: "duplicate_email" });
      // The path under test: better-auth reported its own failure (unique violation), not "already exists".
      expect(
        consoleError.mock.calls.some((call) => call.some((arg) => String(arg).includes("Failed to create user"))),
      ).toBe(true);
    } finally {
      consoleError.mockRestore();
      await holder.query("ROLLBACK").catch(() => {});
      await holder.end();
    }
  });
});

describe("sign-up cannot choose a role", () => {
  it("ignores `role: admin` in the body of the HTTP sign-up endpoint", async () => {
    const email = uniqueEmail("http-role");
    const response = await auth().handler(
      new Request(new URL("/api/auth/sign-up/email", env().APP_URL), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email, password: PASSWORD, name: "Mallory", role: "admin" }),
      }),
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as { user: { id: string; role: string } };
    expect(body.user.role).toBe("user");
    const users = await queryOnce<{ role: string }>(privateDatabaseUrl, `SELECT role FROM "user" WHERE id = $1`, [
      body.user.id,
    ]);
    expect(users).toEqual([{ role: "user" }]);
  });

  it("ignores `role: admin` passed to the server API", async () => {
    const email = uniqueEmail("api-role");
    const body = { email, password: PASSWORD, name: "Mallory", role: "admin" };
    const result = await auth().api.signUpEmail({ body });
    const users = await queryOnce<{ role: string }>(privateDatabaseUrl, `SELECT role FROM "user" WHERE id = $1`, [
      result.user.id,
    ]);
    expect(users).toEqual([{ role: "user" }]);
  });
});

describe("sign-in", () => {
  it("gives one answer for an unknown email and a wrong password", async () => {
    const email = uniqueEmail("signin");
    await createUser({ email, password: PASSWORD, role: "user" });
    const headers = new Headers();
    expect(await signInWithPassword({ email, password: "wrong password 123" }, headers)).toEqual({
      kind: "wrong_credentials",
    });
    expect(await signInWithPassword({ email: uniqueEmail("nobody"), password: PASSWORD }, headers)).toEqual({
      kind: "wrong_credentials",
    });
    const ok = await signInWithPassword({ email: email.toUpperCase(), password: PASSWORD }, headers);
    expect(ok.kind).toBe("signed_in");
  });
});

describe("personal API tokens", () => {
  async function newUser(role: "user" | "admin" = "user") {
    const email = uniqueEmail("tokens");
    const created = await createUser({ email, password: PASSWORD, role });
    if (created.kind !== "created") throw new Error("expected created");
    return { userId: created.userId, email: email.toLowerCase() };
  }

  it("creates a wlt_ token, stores only its SHA-256, and resolves it to its owner", async () => {
    const user = await newUser("admin");
    const created = await createApiTokenOrThrow({ userId: user.userId, name: "  ci  " });
    expect(created.token).toMatch(API_TOKEN_PATTERN);
    expect(created.token).toMatch(/^wlt_[A-Za-z0-9_-]{43}$/);
    expect(created.prefix).toBe(created.token.slice(0, 12));

    const rows = await queryOnce<Record<string, unknown>>(
      privateDatabaseUrl,
      `SELECT * FROM api_tokens WHERE id = $1`,
      [created.id],
    );
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.token_hash).toBe(createHash("sha256").update(created.token).digest("hex"));
    expect(row.name).toBe("ci");
    expect(row.revoked_at).toBeNull();
    // The secret appears in no column.
    expect(JSON.stringify(row)).not.toContain(created.token.slice(12));

    expect(await findPrincipalByToken(created.token)).toEqual({
      userId: user.userId,
      email: user.email,
      role: "admin",
      via: "token",
    });
    expect(await getPrincipal(new Headers({ authorization: `Bearer ${created.token}` }))).toEqual({
      userId: user.userId,
      email: user.email,
      role: "admin",
      via: "token",
    });
    // RFC 6750: the scheme is case-insensitive.
    expect((await getPrincipal(new Headers({ authorization: `bearer ${created.token}` })))?.userId).toBe(user.userId);
  });

  it("makes two tokens that differ", async () => {
    const user = await newUser();
    const a = await createApiTokenOrThrow({ userId: user.userId, name: "a" });
    const b = await createApiTokenOrThrow({ userId: user.userId, name: "b" });
    expect(a.token).not.toBe(b.token);
    expect(a.id).not.toBe(b.id);
  });

  it("refuses an empty or over-long name", async () => {
    const user = await newUser();
    await expect(createApiTokenOrThrow({ userId: user.userId, name: "   " })).rejects.toThrow(RangeError);
    await expect(createApiTokenOrThrow({ userId: user.userId, name: "x".repeat(101) })).rejects.toThrow(RangeError);
  });

  it("stops resolving a revoked token; revoking twice or someone else's token changes nothing", async () => {
    const owner = await newUser();
    const stranger = await newUser();
    const created = await createApiTokenOrThrow({ userId: owner.userId, name: "to revoke" });

    expect(await revokeApiToken({ userId: stranger.userId, tokenId: created.id })).toEqual({ kind: "not_found" });
    expect((await findPrincipalByToken(created.token))?.userId).toBe(owner.userId);

    const revoked = await revokeApiToken({ userId: owner.userId, tokenId: created.id });
    expect(revoked.kind).toBe("revoked");
    expect(await findPrincipalByToken(created.token)).toBeNull();
    expect(await getPrincipal(new Headers({ authorization: `Bearer ${created.token}` }))).toBeNull();

    const firstRevokedAt = await queryOnce<{ revoked_at: Date }>(
      privateDatabaseUrl,
      `SELECT revoked_at FROM api_tokens WHERE id = $1`,
      [created.id],
    );
    expect(await revokeApiToken({ userId: owner.userId, tokenId: created.id })).toEqual({ kind: "not_found" });
    const secondRevokedAt = await queryOnce<{ revoked_at: Date }>(
      privateDatabaseUrl,
      `SELECT revoked_at FROM api_tokens WHERE id = $1`,
      [created.id],
    );
    expect(secondRevokedAt).toEqual(firstRevokedAt);
  });

  it("resolves forged, malformed and foreign-scheme credentials to null", async () => {
    const forged = `wlt_${Buffer.alloc(32, 7).toString("base64url")}`;
    expect(forged).toMatch(API_TOKEN_PATTERN);
    expect(await findPrincipalByToken(forged)).toBeNull();
    expect(await findPrincipalByToken("wlt_short")).toBeNull();
    expect(await findPrincipalByToken("")).toBeNull();
    expect(await getPrincipal(new Headers({ authorization: `Bearer ${forged}` }))).toBeNull();
    expect(await getPrincipal(new Headers({ authorization: "Bearer" }))).toBeNull();
    expect(await getPrincipal(new Headers({ authorization: "Basic dXNlcjpwYXNz" }))).toBeNull();
  });

  it("lists every active token, then the revoked ones, newest first, without secrets", async () => {
    const user = await newUser();
    const first = await createApiTokenOrThrow({ userId: user.userId, name: "first" });
    const second = await createApiTokenOrThrow({ userId: user.userId, name: "second" });
    await revokeApiToken({ userId: user.userId, tokenId: first.id });
    const list = await listApiTokens(user.userId);
    expect(list.active.map((t) => t.id)).toEqual([second.id]);
    expect(list.inactive.map((t) => t.id)).toEqual([first.id]);
    expect(list.inactive[0]?.revokedAt).toBeInstanceOf(Date);
    expect(list.nextInactiveAfterId).toBeNull();
    expect(Object.keys(list.active[0]!).sort()).toEqual([
      "createdAt",
      "expiresAt",
      "id",
      "name",
      "prefix",
      "revokedAt",
    ]);
    expect(await listApiTokens((await newUser()).userId)).toEqual({
      active: [],
      inactive: [],
      nextInactiveAfterId: null,
    });
  });
});

describe("getPrincipal with the session cookie", () => {
  it("resolves the cookie's session, and never falls back to it when a bearer token is sent", async () => {
    const email = uniqueEmail("cookie");
    const created = await createUser({ email, password: PASSWORD, role: "user" });
    if (created.kind !== "created") throw new Error("expected created");
    const cookie = await sessionCookieFor(email);

    expect(await getPrincipal(new Headers({ cookie }))).toEqual({
      userId: created.userId,
      email: email.toLowerCase(),
      role: "user",
      via: "session",
    });
    const forged = `wlt_${Buffer.alloc(32, 9).toString("base64url")}`;
    expect(await getPrincipal(new Headers({ cookie, authorization: `Bearer ${forged}` }))).toBeNull();
    expect(await getPrincipal(new Headers({ cookie, authorization: "Basic dXNlcjpwYXNz" }))).toBeNull();
    expect(await getPrincipal(new Headers())).toBeNull();
    expect(await getPrincipal(new Headers({ cookie: "better-auth.session_token=forged.value" }))).toBeNull();
  });

  it("stops resolving the cookie after sign-out", async () => {
    const email = uniqueEmail("signout");
    await createUser({ email, password: PASSWORD, role: "user" });
    const cookie = await sessionCookieFor(email);
    expect(await getPrincipal(new Headers({ cookie }))).not.toBeNull();
    await auth().api.signOut({ headers: new Headers({ cookie }) });
    expect(await getPrincipal(new Headers({ cookie }))).toBeNull();
  });

  it("sees a role change on the next request (no cookie cache)", async () => {
    const email = uniqueEmail("promote");
    const created = await createUser({ email, password: PASSWORD, role: "user" });
    if (created.kind !== "created") throw new Error("expected created");
    const cookie = await sessionCookieFor(email);
    expect((await getPrincipal(new Headers({ cookie })))?.role).toBe("user");
    await pool().query(`UPDATE "user" SET role = 'admin' WHERE id = $1`, [created.userId]);
    expect((await getPrincipal(new Headers({ cookie })))?.role).toBe("admin");
  });
});

describe("checking credentials writes nothing", () => {
  /**
   * Sum of inserted, updated and deleted rows over every table of this file's database, as PostgreSQL's
   * statistics record them. Each backend publishes its counts when it exits, so the app's pool is closed and
   * its backends are awaited first; the probe connection itself only reads.
   */
  async function rowsWritten(): Promise<number> {
    await closeDb();
    // Wait (up to 10 s, 50 ms apart) for the closed pool's backends to finish exiting.
    await waitFor(
      () =>
        queryOnce(
          privateDatabaseUrl,
          `SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = 'wallet-app'`,
          [databaseName],
        ),
      (live) => live.length === 0,
      { what: "the closed pool's backends to exit", intervalMs: 50 },
    );
    const rows = await queryOnce<{ written: string }>(
      privateDatabaseUrl,
      `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::text AS written FROM pg_stat_user_tables`,
    );
    return Number(rows[0]?.written);
  }

  it("looks up tokens and sessions with SELECTs only: no row written anywhere, one query per token check", async () => {
    const email = uniqueEmail("nowrite");
    const created = await createUser({ email, password: PASSWORD, role: "user" });
    if (created.kind !== "created") throw new Error("expected created");
    const token = (await createApiTokenOrThrow({ userId: created.userId, name: "read-only" })).token;
    const revoked = await createApiTokenOrThrow({ userId: created.userId, name: "revoked" });
    await revokeApiToken({ userId: created.userId, tokenId: revoked.id });
    const cookie = await sessionCookieFor(email);
    const xminBefore = await queryOnce<{ xmin: string }>(
      privateDatabaseUrl,
      `SELECT xmin::text FROM api_tokens WHERE token_hash = $1`,
      [createHash("sha256").update(token).digest("hex")],
    );

    const before = await rowsWritten();
    const querySpy = vi.spyOn(pool(), "query");
    // 20 of each: a per-request write (a "last used" stamp, a counter, a session refresh) would show up 20 times.
    for (let i = 0; i < 20; i++) {
      expect((await getPrincipal(new Headers({ authorization: `Bearer ${token}` })))?.via).toBe("token");
      expect(await getPrincipal(new Headers({ authorization: `Bearer ${revoked.token}` }))).toBeNull();
    }
    expect(querySpy).toHaveBeenCalledTimes(40);
    for (const call of querySpy.mock.calls) expect(statementText(call[0])).toMatch(/^SELECT\b/);
    querySpy.mockRestore();
    // Sessions go through better-auth's own queries on pooled clients: every statement on any client is counted,
    // after one unmeasured check (a new auth instance validates its schema once, with two catalog queries).
    expect((await getPrincipal(new Headers({ cookie })))?.via).toBe("session");
    const clientSpy = vi.spyOn(pg.Client.prototype, "query");
    for (let i = 0; i < 20; i++) {
      expect((await getPrincipal(new Headers({ cookie })))?.via).toBe("session");
    }
    // One statement per session check: the session joined to its user.
    expect(clientSpy).toHaveBeenCalledTimes(20);
    for (const call of clientSpy.mock.calls) expect(statementText(call[0])).toMatch(/^select\b/i);
    clientSpy.mockRestore();
    expect(await rowsWritten()).toBe(before);

    const xminAfter = await queryOnce<{ xmin: string }>(
      privateDatabaseUrl,
      `SELECT xmin::text FROM api_tokens WHERE token_hash = $1`,
      [createHash("sha256").update(token).digest("hex")],
    );
    expect(xminAfter).toEqual(xminBefore);

    // Control: the measurement does see a write (one revocation = one updated row).
    await revokeApiToken({
      userId: created.userId,
      tokenId: (await createApiTokenOrThrow({ userId: created.userId, name: "control" })).id,
    });
    expect(await rowsWritten()).toBe(before + 2);
  });
});
