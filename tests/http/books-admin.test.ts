/**
 * The books for admins over real HTTP (contract section 13.5): `GET /api/v1/admin/books` and
 * `GET /api/v1/admin/books/{account}/postings` answer admins only (401 without credentials, 403 for a user), a house
 * account's postings page by cursor, a name that is not a house account is 404 and a bad query 400 (each answer held
 * to the OpenAPI document by the suite); the pages `/admin/books` and `/admin/books/{account}` send a visitor to sign
 * in, show a user the 403 page, and show an unknown account the 404 page.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createUser } from "../../lib/users/create-user";
import { postJsonFrom, requestFrom } from "../helpers/from-address";
import { api, createApiUser } from "../helpers/http";
import { freshRefId } from "../helpers/ledger";
import { appUrl } from "../helpers/stack";

const PASSWORD = "correct horse battery staple";
/** Every request here comes from this loopback address; the throttles are not under test. */
const FROM = "127.0.0.5";

/** An account with a password, signed in: its session cookie (`name=value`). */
async function sessionCookie(role: "user" | "admin"): Promise<string> {
  const email = `books-${randomUUID()}@example.test`;
  const created = await createUser({ email, password: PASSWORD, role });
  if (created.kind !== "created") throw new Error("the account could not be created");
  const signIn = await postJsonFrom(FROM, `${appUrl()}/api/auth/sign-in/email`, { email, password: PASSWORD });
  expect(signIn.status).toBe(200);
  return String(signIn.headers["set-cookie"]?.[0]).split(";")[0]!;
}

/** A page of the app as a browser without JavaScript gets it (redirects not followed). */
function page(path: string, cookie?: string) {
  return requestFrom(FROM, `${appUrl()}${path}`, { headers: cookie ? { cookie } : {} });
}

describe("GET /api/v1/admin/books", () => {
  it("is 401 without credentials, 403 for a user, and the trial balance for an admin", async () => {
    const [user, admin] = await Promise.all([createApiUser(), createApiUser("admin")]);
    const anonymous = await api("/api/v1/admin/books");
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.code).toBe("unauthenticated");
    const refused = await api("/api/v1/admin/books", { token: user.token });
    expect(refused.status).toBe(403);
    expect(refused.json.code).toBe("forbidden");

    const books = await api("/api/v1/admin/books", { token: admin.token });
    expect(books.status, books.text).toBe(200);
    expect(books.json.lines.map((l: { account: string; line: string }) => `${l.account}:${l.line}`)).toEqual([
      "bank_clearing:house",
      "rewards_funded:house",
      "merchants_payable:house",
      "payouts_in_flight:house",
      "refunds_in_flight:house",
      "transfers_in_transit:house",
      "wallet:owed_to_users",
      "wallet:owed_by_users",
    ]);
    expect(books.json.days).toHaveLength(14);
    expect(typeof books.json.balanced).toBe("boolean");
  });
});

describe("GET /api/v1/admin/books/{account}/postings", () => {
  it("pages a house account by cursor for admins; 403 for a user; 404 for a name that is not a house account", async () => {
    const [user, admin] = await Promise.all([createApiUser(), createApiUser("admin")]);
    // Two top-ups of this user: the clearing account then has at least two postings.
    for (const amount of [1000, 1100]) {
      const made = await api("/api/v1/topups", { token: user.token, body: { refId: freshRefId("books"), amount } });
      expect(made.status).toBe(201);
    }
    expect((await api("/api/v1/admin/books/bank_clearing/postings", { token: user.token })).status).toBe(403);
    expect((await api("/api/v1/admin/books/bank_clearing/postings")).status).toBe(401);

    const first = await api("/api/v1/admin/books/bank_clearing/postings?limit=1", { token: admin.token });
    expect(first.status, first.text).toBe(200);
    expect(first.json.account).toMatchObject({ name: "bank_clearing", normalSide: "debit" });
    expect(first.json.postings).toHaveLength(1);
    expect(first.json.nextCursor).toEqual(expect.any(String));
    const second = await api(
      `/api/v1/admin/books/bank_clearing/postings?limit=1&cursor=${encodeURIComponent(first.json.nextCursor)}`,
      { token: admin.token },
    );
    expect(second.status, second.text).toBe(200);
    expect(second.json.postings[0].id).not.toBe(first.json.postings[0].id);

    for (const account of ["wallet", "no_such_account"]) {
      const missing = await api(`/api/v1/admin/books/${account}/postings`, { token: admin.token });
      expect(missing.status).toBe(404);
      expect(missing.json.code).toBe("not_found");
    }
    // Another account's cursor, a malformed cursor and a limit out of range: 400 invalid_request.
    for (const query of [
      `cursor=${encodeURIComponent(first.json.nextCursor)}`,
      "cursor=not-a-cursor!",
      "cursor=bm90LWEtY3Vyc29y",
      "limit=0",
    ]) {
      const bad = await api(`/api/v1/admin/books/merchants_payable/postings?${query}`, { token: admin.token });
      expect(bad.status, query).toBe(400);
      expect(bad.json.code).toBe("invalid_request");
    }
  });
});

describe("the Books pages", () => {
  it("send a visitor to sign in, show a user the 403 page, an admin the books, and an unknown account the 404 page", async () => {
    const [userCookie, adminCookie] = [await sessionCookie("user"), await sessionCookie("admin")];
    for (const path of ["/admin/books", "/admin/books/bank_clearing"]) {
      const visitor = await page(path);
      expect([303, 307]).toContain(visitor.status);
      expect(String(visitor.headers.location)).toContain("/sign-in");
      expect((await page(path, userCookie)).status).toBe(403);
    }
    const books = await page("/admin/books", adminCookie);
    expect(books.status).toBe(200);
    expect(books.text).toContain('data-testid="trial-balance"');
    const account = await page("/admin/books/merchants_payable", adminCookie);
    expect(account.status).toBe(200);
    expect(account.text).toContain("Merchants payable");
    for (const path of ["/admin/books/wallet", "/admin/books/no_such_account"]) {
      expect((await page(path, adminCookie)).status, path).toBe(404);
    }
    // A cursor that is not one: the newest postings, and a sentence saying so (not a 500).
    const refused = await page("/admin/books/merchants_payable?cursor=not-a-cursor!", adminCookie);
    expect(refused.status).toBe(200);
    expect(refused.text).toContain("was not understood");
  });
});
