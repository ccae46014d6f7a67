/**
 * C31: user-supplied text that is not money, against a real PostgreSQL, which refuses `\u0000` in a text value
 * (SQLSTATE 22021). Every lib door where such text reaches a query refuses it first, as a value or a RangeError,
 * and writes nothing: an API token's name, an account's name and picture address (better-auth's own sign-up), the
 * admin timeline's user id. tests/http/hostile-inputs.test.ts sends the same inputs to the built app's pages.
 *
 * The first test is the kind's control: the same text handed to PostgreSQL as it is fails with 22021, so each guard
 * below is what stands between the input and a 500. Negative controls of the guards, by hand: drop `.refine(isPlainLine)`
 * from `apiTokenNameField` (lib/api-tokens/create-api-token.ts) or from `nameField` / `imageField`
 * (lib/auth/credential-fields.ts), or go back to `userId.length === 0` in getTopupTimeline
 * (lib/admin/get-topup-timeline.ts): the matching test then fails with the database's 22021 instead.
 */
import { randomUUID } from "node:crypto";
import { isAPIError } from "better-auth/api";
import { describe, expect, it } from "vitest";
import { getTopupTimeline } from "@/lib/admin/get-topup-timeline";
import { createApiToken } from "@/lib/api-tokens/create-api-token";
import { auth } from "@/lib/auth/auth";
import { createUser } from "@/lib/users/create-user";
import { createTestUser, testPool } from "../helpers/db";

const PASSWORD = "correct horse battery staple";
const NUL_NAME = "a\u0000b";

async function tokenCount(userId: string): Promise<number> {
  const result = await testPool().query<{ n: number }>("SELECT count(*)::int AS n FROM api_tokens WHERE user_id = $1", [
    userId,
  ]);
  return result.rows[0]!.n;
}

async function userCount(email: string): Promise<number> {
  const result = await testPool().query<{ n: number }>(`SELECT count(*)::int AS n FROM "user" WHERE email = $1`, [
    email,
  ]);
  return result.rows[0]!.n;
}

describe("C31: NUL in fields that are not money", () => {
  it("C31: control: PostgreSQL itself refuses \\u0000 in text (22021), so every guard below is what prevents a 500", async () => {
    await expect(testPool().query("SELECT $1::text AS name", [NUL_NAME])).rejects.toMatchObject({ code: "22021" });
  });

  it("C31: an API token named a\\u0000b is refused before the database (RangeError), and no token is made", async () => {
    const user = await createTestUser();
    await expect(createApiToken({ userId: user.id, name: NUL_NAME })).rejects.toThrow(
      new RangeError("API token name must be 1..100 characters without control characters"),
    );
    await expect(createApiToken({ userId: user.id, name: "line\nbreak" })).rejects.toThrow(RangeError);
    expect(await tokenCount(user.id)).toBe(0);
    expect(await createApiToken({ userId: user.id, name: "a b" })).toMatchObject({ kind: "created" });
    expect(await tokenCount(user.id)).toBe(1);
  });

  it("C31: an account name or picture address holding \\u0000 is refused by every sign-up door, and no account is made", async () => {
    const email = `c31-${randomUUID()}@example.test`;
    await expect(createUser({ email, password: PASSWORD, name: NUL_NAME, role: "user" })).rejects.toThrow(
      new RangeError("name must be 1..100 characters without control characters"),
    );
    // better-auth's own endpoint (the HTTP door calls the same), with a field the product never shows.
    const refusal = await auth()
      .api.signUpEmail({ body: { email, password: PASSWORD, name: "Ann", image: "https://x.example/\u0000" } })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(isAPIError(refusal)).toBe(true);
    expect(refusal).toMatchObject({ statusCode: 400, body: { code: "INVALID_IMAGE" } });
    expect(await userCount(email)).toBe(0);
  });

  it("C31: the admin timeline of user id \\u0000 is 'not found' without a query", async () => {
    expect(await getTopupTimeline("\u0000", "r-1")).toBeNull();
    expect(await getTopupTimeline("u\u0000", "r-1")).toBeNull();
    expect(await getTopupTimeline("", "r-1")).toBeNull();
  });
});
